// One retrieval run: its metadata, topic entities and scored triples by rank.
// Parameters: :param run => 'subgraphrag-WebQTest-0-1a2b3c4d'
MATCH (ret:Retrieval {run: $run})
CALL (ret) {
  OPTIONAL MATCH (ret)-[:TOPIC]->(e:Entity)
  WITH e ORDER BY e.id
  RETURN collect(e.id) AS topics
}
CALL (ret) {
  OPTIONAL MATCH (h:Entity)-[s:SCORED {run: $run}]->(t:Entity)
  WITH h, s, t ORDER BY s.rank
  RETURN collect({h: h.id, h_name: h.name, rel: s.rel, t: t.id, t_name: t.name, score: s.score, rank: s.rank}) AS triples
}
RETURN ret.run AS run, ret.qid AS qid, ret.question AS question, ret.retriever AS retriever, ret.k AS k,
       toString(ret.created) AS created, topics, [x IN triples WHERE x.rank IS NOT NULL] AS triples;
