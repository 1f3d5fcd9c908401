// Retrieval runs written back to the graph, newest first, with their number of scored triples.
// Parameters: :param qid => null   (a question id to list only its runs)   :param limit => 50
MATCH (ret:Retrieval)
WHERE $qid IS NULL OR ret.qid = $qid
WITH ret ORDER BY ret.created DESC, ret.run LIMIT $limit
RETURN ret.run AS run, ret.qid AS qid, ret.retriever AS retriever, ret.k AS k,
       toString(ret.created) AS created, ret.question AS question,
       COUNT { ()-[s:SCORED]->() WHERE s.run = ret.run } AS triples;
