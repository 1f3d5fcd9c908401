// All shortest paths between topic and answer entities, per (topic, answer) pair, as triples.
// Directed both ways (topic → answer and answer → topic, as SubgraphRAG labels them); when both
// directions have paths only the overall shortest are kept. With $undirected, a pair without any
// directed path falls back to shortest paths that ignore edge direction. Paths are sequences of
// relationships, so parallel relations between the same two entities are distinct paths.
// Paths longer than 8 triples are not searched.
// Parameters:
//   :param topics => ['Jamaica']   :param answers => ['Jamaican English']   :param undirected => true
UNWIND $topics AS sid
UNWIND $answers AS aid
MATCH (s:Entity {id: sid}), (a:Entity {id: aid})
WHERE s <> a
CALL (s, a) {
  CALL (s, a) {
    MATCH p = ALL SHORTEST (s)((x:Entity)-[r:!SCORED]->(y:Entity)){1,8}(a)
    RETURN p, 'forward' AS direction
    UNION
    MATCH p = ALL SHORTEST (a)((x:Entity)-[r:!SCORED]->(y:Entity)){1,8}(s)
    RETURN p, 'backward' AS direction
  }
  RETURN collect({p: p, direction: direction, len: length(p)}) AS directed
}
CALL (s, a, directed) {
  WITH s, a WHERE $undirected AND size(directed) = 0
  MATCH p = ALL SHORTEST (s)((x:Entity)-[r:!SCORED]-(y:Entity)){1,8}(a)
  RETURN collect({p: p, direction: 'undirected', len: length(p)}) AS undirected
}
WITH sid, aid, directed + undirected AS found, reduce(m = 99, f IN directed | CASE WHEN f.len < m THEN f.len ELSE m END) AS best
UNWIND [f IN found WHERE f.direction = 'undirected' OR f.len = best] AS f
RETURN sid AS topic, aid AS answer, f.direction AS direction, f.len AS length,
       [r IN relationships(f.p) | [elementId(r), startNode(r).id, type(r), endNode(r).id]] AS triples
ORDER BY topic, answer, direction, triples;
