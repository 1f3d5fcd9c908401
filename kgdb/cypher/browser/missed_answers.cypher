// Browser: questions whose gold answer was not retrieved: runs where no answer entity of the question
// is the head or tail of any of the run's scored triples (table view).
//   :param retriever => null        // a retriever name, or null for every run
MATCH (ret:Retrieval)
WHERE $retriever IS NULL OR ret.retriever = $retriever
MATCH (q:Question {id: ret.qid})
WHERE size(coalesce(q.answer_entities, [])) > 0
WITH ret, q, COUNT {
  MATCH (h:Entity)-[s:SCORED {run: ret.run}]->(t:Entity)
  WHERE h.id IN q.answer_entities OR t.id IN q.answer_entities
} AS answer_edges
WHERE answer_edges = 0
RETURN ret.run AS run, ret.retriever AS retriever, q.id AS qid, q.text AS question,
       q.answer_entities AS answers, ret.k AS k
ORDER BY retriever, qid;
