// One BFS level of a topic-centred subgraph: the triples of the frontier entities, following
// relationships in both directions, with a per-node expansion cap. kgdb.cypher.retrieval runs it once
// per hop (level 1: the topic entities by id; level k: the entities first reached at level k-1 by idx),
// so every node is expanded at most once and large sets travel as parameters, never as lists carried
// in rows (which Neo4j's memory accounting charges once per row).
//
// Parameters:
//   :param ids => ['Jamaica']             // Entity.id values to expand (topic entities)
//   :param idx => []                       // Entity.idx values to expand (later levels)
//   :param cap => 100                      // most triples expanded from any one node
//   :param relation_sims => {}             // relation type -> vector.similarity.cosine(Relation.embedding, question)
//                                          // of the types met at the hubs expanded ({} when no question is given)
//   :param degrees => false                // also return each reached node's degree (levels before the last)
//
// Cap rule: a node with more than $cap relationships keeps the $cap triples whose relation is most
// cosine-similar to the question (Relation.embedding, the vectors of the relation_embedding index;
// the caller computes them, as Neo4j's vector.similarity.cosine does, for the types hub_relation_types
// finds at the level's hubs, into $relation_sims: a type missing from it counts 0.0);
// ties, and every capped node when no question is given, are broken by relation name, then neighbour idx.
// The degree test counts all relationships (degree store, no scan), so bookkeeping edges can only make
// the cap apply a little earlier, never later.
// Bookkeeping relationships are never followed: SCORED is excluded, ABOUT and TOPIC start at
// non-Entity nodes. Output: one row of parallel lists (edges, reached nodes, expanded nodes).
// node_degree (with $degrees) is each reached node's relationship count from the degree store: what
// expanding it at the next level costs, min(degree, $cap) triples, so the caller can keep a level
// inside the subgraph's triple budget before sending it (a hub frontier never overshoots by a chunk).
CALL () {
  UNWIND $ids AS key MATCH (n:Entity {id: key}) RETURN n
  UNION
  UNWIND $idx AS i MATCH (n:Entity {idx: i}) RETURN n
}
CALL (n) {
  WITH n WHERE COUNT { (n)--() } <= $cap
  MATCH (n)-[r]-(m:Entity) WHERE NOT r:SCORED
  RETURN r, m
  UNION ALL
  WITH n WHERE COUNT { (n)--() } > $cap
  MATCH (n)-[r]-(m:Entity) WHERE NOT r:SCORED
  // a map lookup per relationship: no grouping, no Relation lookups inside the scan of a hub
  WITH r, m, type(r) AS rt
  WITH r, m, rt, coalesce($relation_sims[rt], 0.0) AS sim
  ORDER BY sim DESC, rt, m.idx LIMIT $cap
  RETURN r, m
}
WITH collect(DISTINCT n) AS expanded, collect(DISTINCT r) AS rels, collect(DISTINCT m) AS reached
RETURN [x IN expanded | x.id] AS expanded_id, [x IN expanded | x.idx] AS expanded_idx,
       [x IN expanded | x.name] AS expanded_name, [x IN expanded | 'CVT' IN labels(x)] AS expanded_cvt,
       [x IN reached | x.id] AS node_id, [x IN reached | x.idx] AS node_idx,
       [x IN reached | x.name] AS node_name, [x IN reached | 'CVT' IN labels(x)] AS node_cvt,
       CASE WHEN $degrees THEN [x IN reached | COUNT { (x)--() }] ELSE [] END AS node_degree,
       [r IN rels | startNode(r).idx] AS head_idx, [r IN rels | type(r)] AS rel_type,
       [r IN rels | endNode(r).idx] AS tail_idx, [r IN rels | elementId(r)] AS edge_ids;
