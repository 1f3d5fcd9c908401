// Browser: the answers of one retrieval run as the answer model judged them, first answer first, with the
// run's confidence that its first answer is right (`sure`: whether `kgdb ask` printed it as sure) and each
// answer's own (set the ANSWER caption to `confidence` in Browser's style panel). Runs answered without the
// answer model (an LLM answered, or KGDB_ANSWER_MODEL=none) have no ANSWER edges.
//   :param run => 'relation-paths-WebQTest-0-1a2b3c4d'    (list runs: `kgdb runs list`)
MATCH (ret:Retrieval {run: $run})-[a:ANSWER]->(e:Entity)
RETURN ret.question AS question, ret.confidence AS confidence, ret.sure AS sure,
       a.rank AS rank, e.name AS answer, a.confidence AS answer_confidence, ret, a, e
ORDER BY a.rank;
