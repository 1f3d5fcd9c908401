// The label paths training uses (`kgdb train NAME --labels rapl|reg`): per question, the newest
// successful labelling of that method (any model / prompt version), each path's triples as dense
// ids (Entity.idx, Relation.idx) so they map onto a cached subgraph.
// Parameters: :param qids => ['WebQTrn-0']  :param method => 'rapl'
UNWIND $qids AS qid
CALL (qid) {
  MATCH (l:Labelling {qid: qid, method: $method, status: 'ok'})
  RETURN l ORDER BY l.created DESC LIMIT 1
}
MATCH (l)-[:SELECTED]->(p:LabelPath)
RETURN qid, l.key AS labelling, toString(l.created) AS created, p.rank AS rank,
       [x IN p.heads | head(COLLECT { MATCH (e:Entity {id: x}) RETURN e.idx })] AS heads,
       [x IN p.relations | head(COLLECT { MATCH (r:Relation {name: x}) RETURN r.idx })] AS relations,
       [x IN p.tails | head(COLLECT { MATCH (e:Entity {id: x}) RETURN e.idx })] AS tails
ORDER BY qid, rank;
