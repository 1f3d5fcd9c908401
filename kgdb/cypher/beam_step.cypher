// Graph-constrained decoding of the RRP planner, one call per decoding step for the whole beam: for
// every beam prefix, the distinct entities it reaches (its parent's entities $prefixes[i].ids, one
// (relation, direction) step further, at most $cap in id order, set semantics as the planner's
// labels (kgdb/data/relation_paths.py); a prefix
// with relation null is the topics themselves) and the (relation, direction) steps that leave them
// (the tokens that may come next, as relations_around.cypher; direction 1 = the entity is the head).
// A prefix that reaches nothing returns no row. A step with more than $scan relationships from one entity
// (a hub's) is read as a sample of its ends, as in relation_steps.cypher.
// Parameters:
//   :param prefixes => [{key: 0, ids: ['Jamaica'], relation: null, direction: 0}, {key: 1, ids: ['Jamaica'], relation: 'location.country.capital', direction: 1}]
//   :param cap => 200       // most entities kept per prefix
//   :param limit => 1000    // most (relation, direction) steps per prefix
//   :param scan => 100000   // most relationships of one step of one entity read whole (KGDB_RRP_STEP_SCAN; null: no bound)
UNWIND $prefixes AS p
CALL (p) {
  WITH p WHERE p.relation IS NULL
  UNWIND p.ids AS id
  MATCH (y:Entity {id: id})
  RETURN y
  UNION
  WITH p WHERE p.relation IS NOT NULL
  UNWIND p.ids AS id
  MATCH (x:Entity {id: id})
  WITH p, x, CASE WHEN $scan IS NULL THEN [] WHEN COUNT { (x)--() } > $scan THEN COLLECT {
    MATCH (x)-[r]-(:Entity)
    WITH type(r) AS relation, CASE WHEN startNode(r) = x THEN 1 ELSE -1 END AS direction, count(*) AS n
    WHERE n > $scan
    RETURN {relation: relation, direction: direction, stride: CASE WHEN n / (4 * $cap) > 1 THEN n / (4 * $cap) ELSE 1 END}
  } ELSE [] END AS big
  MATCH (x)-[r:$(p.relation)]-(y:Entity)
  WHERE (p.direction = 0 OR (p.direction = 1) = (startNode(r) = x))
    AND (big = [] OR all(b IN big WHERE b.relation <> type(r) OR b.direction <> CASE WHEN startNode(r) = x THEN 1 ELSE -1 END OR y.idx % b.stride = 0))
  WITH DISTINCT y
  ORDER BY y.id
  LIMIT $cap
  RETURN y
}
WITH p, collect(y) AS ends
CALL (ends) {
  UNWIND ends AS x
  MATCH (x)-[r]-(:Entity)
  WHERE NOT r:SCORED
  WITH DISTINCT type(r) AS relation, CASE WHEN startNode(r) = x THEN 1 ELSE -1 END AS direction
  ORDER BY relation, direction
  LIMIT $limit
  RETURN collect([relation, direction]) AS steps
}
RETURN p.key AS key, [e IN ends | e.id] AS ids, steps;
