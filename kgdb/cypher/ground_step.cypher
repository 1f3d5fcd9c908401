// Grounding relation paths (RoG/RRP style), one relation at a time, many paths per call (a planner's
// whole beam from every topic: one query per hop, not one per path and hop). Jobs come in groups that
// share their partial paths (a beam's paths from one topic share it at the first hop, and those with the
// same first relation at the second): each group's entities are expanded once for all its jobs'
// relations, since Neo4j expands a relationship type given as a parameter by reading every relationship
// of the entity (a 50M-triple graph's groundings took half the time, with the same rows: docs/rrp.md, "RRP on
// any graph", benchmarks/db_calls.py). For each job, extend
// every partial path by the relationships of type job.relation at its last entity, never revisiting
// an entity unless $walks: then entities may repeat, but a walk never takes the relationship it just
// took straight back (chosen on MetaQA 3-hop val: Hit@1 98.6 vs 96.0 for simple paths and 81.8 for
// unrestricted walks). job.direction 1 follows relationships head -> tail, -1 against them, 0 either
// way; parallel relationships give separate paths. One row per job that extends (its key and paths).
// The frontier is bounded by entities, not by paths: the first $cap distinct entities reached (in id
// order) and at most $per_end paths to each (in node order), so a hop keeps every entity it can up to
// the cap instead of many walks to a few (MetaQA 3-hop val, first 300: mean answer recall 0.9608 against
// 0.9597 with 200 walks, Hit@1 and Macro-F1 unchanged). The first pass only finds the entities (a
// streaming DISTINCT, no sort of all walks); the second keeps the paths to them.
// Parameters:
//   :param groups => [{paths: [{nodes: ['Jamaica'], triples: []}], relations: ['location.country.languages_spoken'], jobs: [{key: 0, relation: 'location.country.languages_spoken', direction: 0}]}]
//   :param walks => false
//   :param cap => 200           // most distinct entities reached per job and hop
//   :param per_end => 3         // most paths kept to each of them
UNWIND $groups AS grp
CALL (grp) {
  UNWIND grp.paths AS p
  MATCH (x:Entity {id: p.nodes[-1]})-[r]-(y:Entity)
  WHERE type(r) IN grp.relations
    AND (CASE WHEN $walks THEN size(p.triples) = 0 OR p.triples[-1][0] <> elementId(r) ELSE NOT y.id IN p.nodes END)
  UNWIND [j IN grp.jobs WHERE j.relation = type(r) AND (j.direction = 0 OR (j.direction = 1) = (startNode(r) = x)) | j] AS job
  WITH DISTINCT job, y.id AS end
  ORDER BY end
  WITH job, collect(end)[..$cap] AS ends
  RETURN collect({key: job.key, relation: job.relation, direction: job.direction, ends: ends}) AS found
}
CALL (grp, found) {
  UNWIND grp.paths AS p
  MATCH (x:Entity {id: p.nodes[-1]})-[r]-(y:Entity)
  WHERE type(r) IN grp.relations
    AND (CASE WHEN $walks THEN size(p.triples) = 0 OR p.triples[-1][0] <> elementId(r) ELSE NOT y.id IN p.nodes END)
  UNWIND [f IN found WHERE f.relation = type(r) AND (f.direction = 0 OR (f.direction = 1) = (startNode(r) = x)) AND y.id IN f.ends | f.key] AS key
  WITH key, y.id AS end, p.nodes + y.id AS nodes, p.triples + [[elementId(r), startNode(r).id, type(r), endNode(r).id]] AS triples
  ORDER BY key, end, nodes, triples
  WITH key, end, collect({nodes: nodes, triples: triples})[..$per_end] AS kept
  UNWIND kept AS path
  RETURN key, collect(path) AS paths
}
RETURN key, paths;
