// Topic-centred subgraph: every triple on a walk of at most $hops steps from a topic entity,
// following relationships in both directions, with a per-node expansion cap.
//
// Parameters:
//   :param topics => ['Jamaica']          // Entity.id values of the topic entities
//   :param hops => 2                       // 1..4
//   :param cap => 1000                     // most triples expanded from any one node
//   :param question_embedding => null      // unit vector of the question (list of floats), or null
//
// Cap rule: a node with more than $cap relationships keeps the $cap triples whose relation is most
// cosine-similar to the question (Relation.embedding, the vectors of the relation_embedding index);
// ties, and every capped node when no question is given, are broken by relation name, then neighbour idx.
// The degree test counts all relationships (degree store, no scan), so bookkeeping edges can only make
// the cap apply a little earlier, never later.
// Level k expands the nodes first reached at level k-1 (BFS), so every node is expanded at most once.
// Cypher has no loops: the four levels are written out; level k runs only when $hops >= k.
// Bookkeeping relationships are never followed: SCORED is excluded, ABOUT and TOPIC start at
// non-Entity nodes. Output: one row of parallel lists, edges ordered by (head idx, type, tail idx).
MATCH (s:Entity) WHERE s.id IN $topics
WITH collect(s) AS topics
WITH topics, topics AS frontier, topics AS seen, [] AS edges

// ---- level 1
CALL (frontier, seen) {
  UNWIND CASE WHEN $hops >= 1 THEN frontier ELSE [] END AS n
  CALL (n) {
    WITH n WHERE COUNT { (n)--() } <= $cap
    MATCH (n)-[r]-(m:Entity) WHERE NOT r:SCORED
    RETURN r, m
    UNION
    WITH n WHERE COUNT { (n)--() } > $cap
    MATCH (n)-[r]-(m:Entity) WHERE NOT r:SCORED
    WITH type(r) AS rt, collect([r, m]) AS group
    OPTIONAL MATCH (rel:Relation {name: rt})
    WITH rt, group, coalesce(vector.similarity.cosine(rel.embedding, $question_embedding), 0.0) AS sim
    UNWIND group AS pair
    WITH pair[0] AS r, pair[1] AS m, rt, sim ORDER BY sim DESC, rt, m.idx LIMIT $cap
    RETURN r, m
  }
  RETURN collect(DISTINCT r) AS new_edges,
         CASE WHEN $hops > 1 THEN collect(DISTINCT CASE WHEN NOT m IN seen THEN m END) ELSE [] END AS reached
}
WITH topics, reached AS frontier, seen + reached AS seen, edges + new_edges AS edges

// ---- level 2 (same as level 1)
CALL (frontier, seen) {
  UNWIND CASE WHEN $hops >= 2 THEN frontier ELSE [] END AS n
  CALL (n) {
    WITH n WHERE COUNT { (n)--() } <= $cap
    MATCH (n)-[r]-(m:Entity) WHERE NOT r:SCORED
    RETURN r, m
    UNION
    WITH n WHERE COUNT { (n)--() } > $cap
    MATCH (n)-[r]-(m:Entity) WHERE NOT r:SCORED
    WITH type(r) AS rt, collect([r, m]) AS group
    OPTIONAL MATCH (rel:Relation {name: rt})
    WITH rt, group, coalesce(vector.similarity.cosine(rel.embedding, $question_embedding), 0.0) AS sim
    UNWIND group AS pair
    WITH pair[0] AS r, pair[1] AS m, rt, sim ORDER BY sim DESC, rt, m.idx LIMIT $cap
    RETURN r, m
  }
  RETURN collect(DISTINCT r) AS new_edges,
         CASE WHEN $hops > 2 THEN collect(DISTINCT CASE WHEN NOT m IN seen THEN m END) ELSE [] END AS reached
}
WITH topics, reached AS frontier, seen + reached AS seen, edges + new_edges AS edges

// ---- level 3 (same as level 1)
CALL (frontier, seen) {
  UNWIND CASE WHEN $hops >= 3 THEN frontier ELSE [] END AS n
  CALL (n) {
    WITH n WHERE COUNT { (n)--() } <= $cap
    MATCH (n)-[r]-(m:Entity) WHERE NOT r:SCORED
    RETURN r, m
    UNION
    WITH n WHERE COUNT { (n)--() } > $cap
    MATCH (n)-[r]-(m:Entity) WHERE NOT r:SCORED
    WITH type(r) AS rt, collect([r, m]) AS group
    OPTIONAL MATCH (rel:Relation {name: rt})
    WITH rt, group, coalesce(vector.similarity.cosine(rel.embedding, $question_embedding), 0.0) AS sim
    UNWIND group AS pair
    WITH pair[0] AS r, pair[1] AS m, rt, sim ORDER BY sim DESC, rt, m.idx LIMIT $cap
    RETURN r, m
  }
  RETURN collect(DISTINCT r) AS new_edges,
         CASE WHEN $hops > 3 THEN collect(DISTINCT CASE WHEN NOT m IN seen THEN m END) ELSE [] END AS reached
}
WITH topics, reached AS frontier, seen + reached AS seen, edges + new_edges AS edges

// ---- level 4 (same as level 1; the last level needs no new frontier)
CALL (frontier) {
  UNWIND CASE WHEN $hops >= 4 THEN frontier ELSE [] END AS n
  CALL (n) {
    WITH n WHERE COUNT { (n)--() } <= $cap
    MATCH (n)-[r]-(m:Entity) WHERE NOT r:SCORED
    RETURN r, m
    UNION
    WITH n WHERE COUNT { (n)--() } > $cap
    MATCH (n)-[r]-(m:Entity) WHERE NOT r:SCORED
    WITH type(r) AS rt, collect([r, m]) AS group
    OPTIONAL MATCH (rel:Relation {name: rt})
    WITH rt, group, coalesce(vector.similarity.cosine(rel.embedding, $question_embedding), 0.0) AS sim
    UNWIND group AS pair
    WITH pair[0] AS r, pair[1] AS m, rt, sim ORDER BY sim DESC, rt, m.idx LIMIT $cap
    RETURN r, m
  }
  RETURN collect(DISTINCT r) AS new_edges
}
WITH topics, edges + new_edges AS edges

// ---- output: distinct edges, their endpoints and relation types as parallel lists
CALL (edges) {
  UNWIND edges AS r
  WITH DISTINCT r
  WITH r, startNode(r) AS h, endNode(r) AS t, type(r) AS rt
  ORDER BY h.idx, rt, t.idx
  RETURN collect(h.idx) AS head_idx, collect(rt) AS rel_type, collect(t.idx) AS tail_idx,
         collect(elementId(r)) AS edge_ids
}
CALL (edges, topics) {
  CALL (edges, topics) {
    UNWIND topics AS e RETURN e
    UNION
    UNWIND edges AS r UNWIND [startNode(r), endNode(r)] AS e RETURN e
  }
  WITH e ORDER BY e.idx
  RETURN collect(e.idx) AS node_idx, collect(e.id) AS node_id, collect(e.name) AS node_name,
         collect('CVT' IN labels(e)) AS node_cvt
}
CALL (rel_type) {
  UNWIND rel_type AS rt
  WITH DISTINCT rt
  OPTIONAL MATCH (rel:Relation {name: rt})
  RETURN collect(rt) AS type_name, collect(coalesce(rel.idx, -1)) AS type_idx
}
RETURN [t IN topics | t.id] AS topic_id, [t IN topics | t.idx] AS topic_idx, node_idx, node_id, node_name, node_cvt,
       head_idx, rel_type, tail_idx, edge_ids, type_name, type_idx;
