// Enumerating relation paths (the RRP path ranker's candidates), one hop for many prefixes at once: for
// every prefix (a relation path's distinct end entities $prefixes[i].ids), every (relation, direction)
// step that leaves them and the distinct entities each step reaches; set semantics, as the planner's
// labels (kgdb/data/relation_paths.py) and beam_step.cypher. Parallel relationships are separate steps;
// direction 1 follows a relationship head -> tail (the prefix's entity is the head), -1 against it.
// `reached` counts every entity a step reaches; `ids` keeps the first $cap of them in id order (the
// next hop starts from those, as grounding's bounded frontier does) and `cvt` those of them that are
// unnamed compound-value (CVT) nodes. Write-back copies (:SCORED) are not relations of the graph.
// One row per prefix, its steps in (relation, direction) order.
// Parameters:
//   :param prefixes => [{key: 0, ids: ['Jamaica']}]
//   :param cap => 200      // most entities kept per step
//   :param scan => 100000  // most relationships of one step of one entity read whole (KGDB_RRP_STEP_SCAN; null: no bound)
UNWIND $prefixes AS p
// each entity of the prefix, with its steps too big to read whole: a step with more than $scan relationships
// from one entity (a hub's; its degree comes from the store, so no entity below $scan is scanned here) is
// read as a sample, only the ends whose idx is a multiple of a stride that leaves about 4 x $cap of them
CALL (p) {
  UNWIND p.ids AS id
  MATCH (x:Entity {id: id})
  WITH x, CASE WHEN $scan IS NULL THEN [] WHEN COUNT { (x)--() } > $scan THEN COLLECT {
    MATCH (x)-[r]-(:Entity)
    WHERE NOT r:SCORED
    WITH type(r) AS relation, CASE WHEN startNode(r) = x THEN 1 ELSE -1 END AS direction, count(*) AS n
    WHERE n > $scan
    RETURN {relation: relation, direction: direction, n: n, stride: CASE WHEN n / (4 * $cap) > 1 THEN n / (4 * $cap) ELSE 1 END}
  } ELSE [] END AS big
  RETURN collect({x: x, big: big}) AS starts
}
CALL (starts) {
  UNWIND starts AS s
  WITH s.x AS x, s.big AS big
  MATCH (x)-[r]-(y:Entity)
  WHERE NOT r:SCORED
    AND (big = [] OR all(b IN big WHERE b.relation <> type(r) OR b.direction <> CASE WHEN startNode(r) = x THEN 1 ELSE -1 END OR y.idx % b.stride = 0))
  // ids and the CVT label read once per entity reached, in this pass: collecting the nodes and reading
  // both from the lists afterwards took a fifth longer on a 50M-triple graph (the same rows; docs/rrp.md, "RRP
  // on any graph", benchmarks/db_calls.py)
  WITH DISTINCT type(r) AS relation, CASE WHEN startNode(r) = x THEN 1 ELSE -1 END AS direction, y.id AS end, y:CVT AS cvt
  ORDER BY relation, direction, end
  WITH relation, direction, collect(end) AS ends, collect(CASE WHEN cvt THEN end END) AS cvts
  WITH relation, direction, size(ends) AS reached, ends[..$cap] AS ids, cvts
  ORDER BY relation, direction
  // both lists are in id order: the CVT nodes among the first $cap are those up to the last id kept
  RETURN collect({relation: relation, direction: direction, reached: reached, ids: ids,
                  cvt: CASE WHEN reached <= $cap THEN cvts ELSE [c IN cvts WHERE c <= ids[-1]] END}) AS steps
}
// a sampled step reaches as many entities as it has relationships (near enough: a hub's are rarely parallel)
RETURN p.key AS key, steps, [s IN starts WHERE s.big <> [] | s.big] AS sampled
ORDER BY key;
