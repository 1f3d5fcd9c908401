// Several topics, one answer: ground each topic's relation paths and join them on the entity they end at.
// A question that names two or three entities ("which country borders France and uses the euro?") is
// answered by an entity each topic reaches; one reached by every topic comes first, then those reached by
// fewer (intersection first, then the union ordered by how many topics reach a candidate). Each row is one
// candidate answer with, for every topic that reaches it, the grounded paths that do (its joint path), so
// the caller can say why and write it back (topic_intersection_write.cypher).
// Grounding as in ground_step.cypher without walks: a path never revisits an entity; direction 1 follows
// relationships head -> tail, -1 against them, 0 either way; parallel relationships give separate paths.
// Per (topic, relation path) the first $cap distinct ends (in id order) are kept, and per (topic, answer)
// the first $per_end paths (in node order). A topic is never an answer. Paths have 1 to 3 relations.
// Parameters:
//   :param plans => [{topic: 'France', paths: [{relations: ['location.location.adjoin_s', 'location.adjoining_relationship.adjoins'], directions: [1, 1]}]}, {topic: 'Euro', paths: [{relations: ['location.country.currency_used'], directions: [-1]}]}]
//   :param cap => 200        // most distinct ends per topic and relation path
//   :param per_end => 3      // most paths kept per topic and answer
//   :param limit => 100      // most candidate answers returned
WITH [p IN $plans | p.topic] AS topic_ids
UNWIND $plans AS plan
UNWIND plan.paths AS rp
MATCH (t:Entity {id: plan.topic})
CALL (t, rp) {
  WITH t, rp WHERE size(rp.relations) = 1
  MATCH (t)-[r1]-(a:Entity)
  WHERE type(r1) = rp.relations[0] AND (rp.directions[0] = 0 OR (rp.directions[0] = 1) = (startNode(r1) = t))
    AND a <> t
  RETURN a, [t.id, a.id] AS nodes, [[elementId(r1), startNode(r1).id, type(r1), endNode(r1).id]] AS triples
  UNION ALL
  WITH t, rp WHERE size(rp.relations) = 2
  MATCH (t)-[r1]-(x1:Entity)-[r2]-(a:Entity)
  WHERE type(r1) = rp.relations[0] AND (rp.directions[0] = 0 OR (rp.directions[0] = 1) = (startNode(r1) = t))
    AND type(r2) = rp.relations[1] AND (rp.directions[1] = 0 OR (rp.directions[1] = 1) = (startNode(r2) = x1))
    AND x1 <> t AND a <> t AND a <> x1
  RETURN a, [t.id, x1.id, a.id] AS nodes,
         [[elementId(r1), startNode(r1).id, type(r1), endNode(r1).id], [elementId(r2), startNode(r2).id, type(r2), endNode(r2).id]] AS triples
  UNION ALL
  WITH t, rp WHERE size(rp.relations) = 3
  MATCH (t)-[r1]-(x1:Entity)-[r2]-(x2:Entity)-[r3]-(a:Entity)
  WHERE type(r1) = rp.relations[0] AND (rp.directions[0] = 0 OR (rp.directions[0] = 1) = (startNode(r1) = t))
    AND type(r2) = rp.relations[1] AND (rp.directions[1] = 0 OR (rp.directions[1] = 1) = (startNode(r2) = x1))
    AND type(r3) = rp.relations[2] AND (rp.directions[2] = 0 OR (rp.directions[2] = 1) = (startNode(r3) = x2))
    AND x1 <> t AND x2 <> t AND x2 <> x1 AND a <> t AND a <> x1 AND a <> x2
  RETURN a, [t.id, x1.id, x2.id, a.id] AS nodes,
         [[elementId(r1), startNode(r1).id, type(r1), endNode(r1).id], [elementId(r2), startNode(r2).id, type(r2), endNode(r2).id],
          [elementId(r3), startNode(r3).id, type(r3), endNode(r3).id]] AS triples
}
WITH topic_ids, plan.topic AS topic, rp, a.id AS answer, nodes, triples
WHERE NOT answer IN topic_ids
ORDER BY answer, nodes, triples
WITH topic_ids, topic, rp, answer, collect({nodes: nodes, triples: triples}) AS paths
ORDER BY answer
WITH topic_ids, topic, rp, collect({answer: answer, paths: paths})[..$cap] AS ends
UNWIND ends AS end
UNWIND end.paths AS p
WITH topic, end.answer AS answer, rp.relations AS relations, rp.directions AS directions, p
ORDER BY answer, topic, p.nodes, p.triples
WITH answer, topic, collect({relations: relations, directions: directions, nodes: p.nodes, triples: p.triples})[..$per_end] AS paths
ORDER BY answer, topic
WITH answer, collect({topic: topic, paths: paths}) AS reached
RETURN answer, size(reached) AS topics_reached, reached
ORDER BY topics_reached DESC, answer
LIMIT $limit;
