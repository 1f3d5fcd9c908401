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
// streaming DISTINCT, no sort of all walks); the second keeps the paths to them. A step with more than
// $scan relationships from one entity (a hub's in a real Freebase subset) is read as a sample: only the
// ends whose idx is a multiple of a stride that leaves about 4 x $cap of them (as relation_steps.cypher),
// so a hub never holds its millions of ends at once; the second pass reaches a hub's kept ends from
// themselves instead of reading the hub again (docs/scale.md, "Hub topics").
// Parameters:
//   :param groups => [{paths: [{nodes: ['Jamaica'], triples: []}], relations: ['location.country.languages_spoken'], jobs: [{key: 0, relation: 'location.country.languages_spoken', direction: 0}]}]
//   :param walks => false
//   :param cap => 200           // most distinct entities reached per job and hop
//   :param per_end => 3         // most paths kept to each of them
//   :param scan => 100000       // most relationships of one step of one entity read whole (KGDB_RRP_STEP_SCAN; null: no bound)
UNWIND $groups AS grp
// each partial path's last entity, found once for both passes, with its steps too big to read whole
// (its degree comes from the store: no entity below $scan is scanned here)
CALL (grp) {
  UNWIND grp.paths AS p
  MATCH (x:Entity {id: p.nodes[-1]})
  WITH p, x, CASE WHEN $scan IS NULL THEN [] WHEN COUNT { (x)--() } > $scan THEN COLLECT {
    MATCH (x)-[r]-(:Entity)
    WITH type(r) AS relation, CASE WHEN startNode(r) = x THEN 1 ELSE -1 END AS direction, count(*) AS n
    WHERE n > $scan
    RETURN {relation: relation, direction: direction, stride: CASE WHEN n / (4 * $cap) > 1 THEN n / (4 * $cap) ELSE 1 END}
  } ELSE [] END AS big
  RETURN collect({p: p, x: x, big: big}) AS starts
}
CALL (grp, starts) {
  UNWIND starts AS s
  WITH grp, s.p AS p, s.x AS x, s.big AS big
  MATCH (x)-[r]-(y:Entity)
  WHERE type(r) IN grp.relations
    AND (CASE WHEN $walks THEN size(p.triples) = 0 OR p.triples[-1][0] <> elementId(r) ELSE NOT y.id IN p.nodes END)
    AND (big = [] OR all(b IN big WHERE b.relation <> type(r) OR b.direction <> CASE WHEN startNode(r) = x THEN 1 ELSE -1 END OR y.idx % b.stride = 0))
  UNWIND [j IN grp.jobs WHERE j.relation = type(r) AND (j.direction = 0 OR (j.direction = 1) = (startNode(r) = x)) | j] AS job
  WITH DISTINCT job, y.id AS end
  ORDER BY end
  WITH job, collect(end)[..$cap] AS ends
  RETURN collect({key: job.key, relation: job.relation, direction: job.direction, ends: ends}) AS found
}
CALL (grp, starts, found) {
  UNWIND starts AS s
  WITH grp, found, s.p AS p, s.x AS x, s.big AS big
  CALL (found, x, big) {
    // most paths: every relationship of x, the ends searched below
    WITH x WHERE big = []
    MATCH (x)-[r]-(y:Entity)
    RETURN r, y
    UNION ALL
    // a hub's: only its relationships to the ends the first pass kept, found from them (the smaller side)
    WITH found, x WHERE big <> []
    UNWIND reduce(ends = [], f IN found | ends + f.ends) AS end
    WITH DISTINCT x, end
    MATCH (y:Entity {id: end})
    MATCH (x)-[r]-(y)
    RETURN r, y
  }
  WITH grp, found, p, x, big, r, y
  WHERE type(r) IN grp.relations
    AND (CASE WHEN $walks THEN size(p.triples) = 0 OR p.triples[-1][0] <> elementId(r) ELSE NOT y.id IN p.nodes END)
    // an end another path reached is not this hub's unless its sample has it
    AND (big = [] OR all(b IN big WHERE b.relation <> type(r) OR b.direction <> CASE WHEN startNode(r) = x THEN 1 ELSE -1 END OR y.idx % b.stride = 0))
  UNWIND [f IN found WHERE f.relation = type(r) AND (f.direction = 0 OR (f.direction = 1) = (startNode(r) = x)) AND y.id IN f.ends | f.key] AS key
  WITH key, y.id AS end, p.nodes + y.id AS nodes, p.triples + [[elementId(r), startNode(r).id, type(r), endNode(r).id]] AS triples
  ORDER BY key, end, nodes, triples
  WITH key, end, collect({nodes: nodes, triples: triples})[..$per_end] AS kept
  UNWIND kept AS path
  RETURN key, collect(path) AS paths
}
RETURN key, paths;
