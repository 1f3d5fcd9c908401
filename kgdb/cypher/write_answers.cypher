// The answers of one retrieval run as the answer model judged them: the run's confidence that its first
// answer is right, and (ret)-[:ANSWER {rank, confidence}]->(answer) per answer. Writing again replaces them;
// pruning the run (DETACH DELETE of its Retrieval node) removes them.
//
// Parameters:
//   :param run => 'relation-paths-WebQTest-0-1a2b3c4d'   :param confidence => 0.91   :param sure => true
//   :param answers => [{id: 'Jamaican English', rank: 1, confidence: 0.88}]
MATCH (ret:Retrieval {run: $run})
SET ret.confidence = $confidence, ret.sure = $sure
WITH ret
CALL (ret) { MATCH (ret)-[old:ANSWER]->() DELETE old }
CALL (ret) {
  UNWIND $answers AS a
  MATCH (e:Entity {id: a.id})
  CREATE (ret)-[:ANSWER {rank: a.rank, confidence: a.confidence}]->(e)
  RETURN count(*) AS written
}
RETURN written;
