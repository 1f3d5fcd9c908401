// Delete retrieval runs (their Retrieval node, TOPIC links and SCORED edges).
// Parameters: :param runs => ['subgraphrag-WebQTest-0-1a2b3c4d']
UNWIND $runs AS run
MATCH (ret:Retrieval {run: run})
CALL (run) {
  MATCH ()-[s:SCORED {run: run}]->()
  DELETE s
  RETURN count(*) AS edges
}
DETACH DELETE ret
RETURN count(*) AS runs, sum(edges) AS edges;
