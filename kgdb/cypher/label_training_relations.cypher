// RAPL's relation targeting R_* that training uses (`kgdb train rapl --relation-targets`): per
// question, the newest successful labelling of the relation-targeting method (any model / prompt
// version), its relations as dense ids (Relation.idx; null when the relation left the graph) and
// directions (+1: a topic is the triple's head, -1: its tail).
// Parameters: :param qids => ['WebQTrn-0']  :param method => 'rapl-relations'
UNWIND $qids AS qid
CALL (qid) {
  MATCH (l:Labelling {qid: qid, method: $method, status: 'ok'})
  RETURN l ORDER BY l.created DESC LIMIT 1
}
RETURN qid, l.key AS labelling, toString(l.created) AS created, l.directions AS directions,
       [x IN l.relations | head(COLLECT { MATCH (r:Relation {name: x}) RETURN r.idx })] AS relations
ORDER BY qid;
