// A question's LLM-selected label paths (`kgdb label`), drawn on the real triples they use.
// One (:Labelling) per method / model / prompt version; its (:LabelPath) nodes point at their first
// and last entities; the matched (h)-[r]->(t) are the graph's own triples on each path.
// Parameters:
//   :param qid => 'WebQTrn-0'
//   :param method => null        // or 'rapl' / 'reg' to show one method only
MATCH (l:Labelling {qid: $qid})-[:SELECTED]->(p:LabelPath)
WHERE $method IS NULL OR l.method = $method
OPTIONAL MATCH (q:Question)-[:LABELLED]->(l)
UNWIND range(0, size(p.relations) - 1) AS i
MATCH (h:Entity {id: p.heads[i]})-[r]->(t:Entity {id: p.tails[i]})
WHERE type(r) = p.relations[i]
RETURN q, l, p, h, r, t;
