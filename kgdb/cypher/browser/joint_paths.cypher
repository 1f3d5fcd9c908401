// Browser: why a several-topic question was answered as it was: the joint paths of a run written by
// topic_intersection_write.cypher, from each topic to the candidate answers reached by the most topics.
//   :param run => 'topic-intersection-q1-1a2b3c4d'
//   :param rank => 3         // show the first candidates only
MATCH (ret:Retrieval {run: $run})-[:TOPIC]->(topic:Entity)
MATCH p = (topic)(()-[s:SCORED WHERE s.run = $run AND s.rank <= $rank]-()){1,3}(answer:Entity)
WHERE all(x IN s WHERE x.topic = topic.id AND x.answer = answer.id AND x.rank = s[0].rank)
RETURN p, s[0].rank AS rank, answer.name AS answer, s[0].topics_reached AS topics_reached
ORDER BY rank, length(p);
