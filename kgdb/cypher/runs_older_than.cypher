// Run ids matching a filter, for `kgdb runs prune`.
// Parameters: :param retriever => null   :param qid => null   :param before => null  (ISO datetime)
MATCH (ret:Retrieval)
WHERE ($retriever IS NULL OR ret.retriever = $retriever)
  AND ($qid IS NULL OR ret.qid = $qid)
  AND ($before IS NULL OR ret.created < datetime($before))
RETURN ret.run AS run ORDER BY run;
