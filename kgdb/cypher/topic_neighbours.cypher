// Several topics, answers next to them: which of the topics each candidate answer is joined to by one
// relationship, or by two through a compound-value (CVT) node ("the singer-songwriter Tupac Shakur dated":
// Jada Pinkett Smith, one of the people Tupac dated, has the profession Singer-songwriter). A topic that only
// types the answer (a profession, a genre, an office) is rarely among the relation paths planned from it
// with the whole question's words, and a candidate that meets it answers the question better than one that
// does not. Each row is a candidate with, for each topic next to it, the paths that join them (at most
// $per_end per topic, in node order), so the caller can say why and write them back.
// Directions: 1 from the topic along the relationship, -1 against it. A topic is never a candidate, and
// write-back copies (:SCORED) are not relations of the graph.
// Parameters:
//   :param candidates => ['Jada Pinkett Smith', 'Kidada Jones']
//   :param topics => ['Singer-songwriter']
//   :param per_end => 3      // most paths kept per candidate and topic
UNWIND $candidates AS cid
MATCH (a:Entity {id: cid})
UNWIND $topics AS tid
MATCH (t:Entity {id: tid})
WHERE t <> a
CALL (a, t) {
  MATCH (t)-[r1:!SCORED]-(a)
  RETURN [t.id, a.id] AS nodes, [type(r1)] AS relations,
         [CASE WHEN startNode(r1) = t THEN 1 ELSE -1 END] AS directions,
         [[elementId(r1), startNode(r1).id, type(r1), endNode(r1).id]] AS triples
  UNION ALL
  // through a CVT node, expanded from whichever end has fewer relationships (a topic such as Male, or a
  // candidate such as a country, may have millions)
  WITH a, t WHERE COUNT { (a)--() } <= COUNT { (t)--() }
  MATCH (a)-[r2:!SCORED]-(c:CVT)
  WITH a, t, c, r2
  MATCH (t)-[r1:!SCORED]-(c)
  RETURN [t.id, c.id, a.id] AS nodes, [type(r1), type(r2)] AS relations,
         [CASE WHEN startNode(r1) = t THEN 1 ELSE -1 END, CASE WHEN startNode(r2) = c THEN 1 ELSE -1 END] AS directions,
         [[elementId(r1), startNode(r1).id, type(r1), endNode(r1).id],
          [elementId(r2), startNode(r2).id, type(r2), endNode(r2).id]] AS triples
  UNION ALL
  WITH a, t WHERE COUNT { (a)--() } > COUNT { (t)--() }
  MATCH (t)-[r1:!SCORED]-(c:CVT)
  WITH a, t, c, r1
  MATCH (c)-[r2:!SCORED]-(a)
  RETURN [t.id, c.id, a.id] AS nodes, [type(r1), type(r2)] AS relations,
         [CASE WHEN startNode(r1) = t THEN 1 ELSE -1 END, CASE WHEN startNode(r2) = c THEN 1 ELSE -1 END] AS directions,
         [[elementId(r1), startNode(r1).id, type(r1), endNode(r1).id],
          [elementId(r2), startNode(r2).id, type(r2), endNode(r2).id]] AS triples
}
WITH a.id AS answer, t.id AS topic, nodes, relations, directions, triples
ORDER BY answer, topic, nodes, relations, directions, triples
WITH answer, topic, collect({nodes: nodes, relations: relations, directions: directions, triples: triples})[..$per_end] AS paths
ORDER BY answer, topic
RETURN answer, collect({topic: topic, paths: paths}) AS reached
ORDER BY answer;
