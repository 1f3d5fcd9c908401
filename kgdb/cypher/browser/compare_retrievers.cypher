// Browser: two retrievers on one question, triple by triple (table view). Uses the newest run of each
// retriever for the question; a triple kept by only one of them shows null for the other.
//   :param qid => 'WebQTest-0'
//   :param retriever_a => 'subgraphrag'
//   :param retriever_b => 'cosine'
CALL () {
  MATCH (a:Retrieval {qid: $qid}) WHERE a.retriever = $retriever_a
  RETURN a.run AS run_a ORDER BY a.created DESC LIMIT 1
}
CALL () {
  MATCH (b:Retrieval {qid: $qid}) WHERE b.retriever = $retriever_b
  RETURN b.run AS run_b ORDER BY b.created DESC LIMIT 1
}
MATCH (h:Entity)-[s:SCORED]->(t:Entity)
WHERE s.run IN [run_a, run_b]
WITH run_a, run_b, h, t, s.rel AS relation,
     max(CASE WHEN s.run = run_a THEN s.rank END) AS rank_a, max(CASE WHEN s.run = run_a THEN s.score END) AS score_a,
     max(CASE WHEN s.run = run_b THEN s.rank END) AS rank_b, max(CASE WHEN s.run = run_b THEN s.score END) AS score_b
RETURN h.name AS head, relation, t.name AS tail, rank_a, score_a, rank_b, score_b,
       CASE WHEN rank_a IS NULL THEN 'only ' + $retriever_b
            WHEN rank_b IS NULL THEN 'only ' + $retriever_a ELSE 'both' END AS kept_by
ORDER BY coalesce(rank_a, 1000000), coalesce(rank_b, 1000000);
