// A question's relation targeting R_* (`kgdb label --method rapl-relations`), drawn on the topic
// entities' own triples whose relation (in that direction) the LLM selected: these are the extra
// positives of RAPL's question-triple loss (Eq. 8) when training with `--relation-targets`.
// One (:Labelling) per model / prompt version; its `relations` / `directions` lists hold R_*.
// Parameters:
//   :param qid => 'WebQTrn-0'
//   :param method => 'rapl-relations'
// As a table instead: MATCH (l:Labelling {qid: $qid, method: $method})
//   RETURN l.model, l.prompt_version, toString(l.created), l.status, l.relations, l.directions
MATCH (l:Labelling {qid: $qid, method: $method})
OPTIONAL MATCH (q:Question)-[:LABELLED]->(l)
UNWIND range(0, size(l.relations) - 1) AS i
MATCH (t:Entity) WHERE t.id IN l.topics
MATCH (t)-[r]-(o:Entity)
WHERE type(r) = l.relations[i]
  AND ((l.directions[i] = 1 AND startNode(r) = t) OR (l.directions[i] = -1 AND endNode(r) = t))
// The limit: a hub topic (a country) can have thousands of triples with one relation.
RETURN q, l, t, r, o
LIMIT 300;
