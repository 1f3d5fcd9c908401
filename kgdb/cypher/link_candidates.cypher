// Entity-linking candidates for a question: full-text matches of its candidate mentions (exact phrase
// and fuzzy) plus the nearest entity names by vector, each with the question/name cosine similarity.
// Python (kgdb/cypher/linking.py) turns these features into the final ranking.
//
// Parameters:
//   :param mentions => [{mention: 'jamaican', query: '"jamaican" OR jamaican~1'}]   // Lucene queries
//   :param per_mention => 10              // full-text hits kept per mention
//   :param vector_k => 10                 // nearest names from the entity_embedding vector index
//   :param question_embedding => [0.01, ...]   // unit vector of the question (list of floats)
// CVT nodes (opaque ids) and literals are never candidates. A candidate without a vector yet (a lazy
// load) has a null vector_score; the caller fills its vector by idx and computes the cosine itself.
CALL () {
  UNWIND $mentions AS m
  CALL db.index.fulltext.queryNodes('entity_names', m.query, {limit: $per_mention}) YIELD node, score
  RETURN node, m.mention AS mention, score AS text_score
  UNION ALL
  CALL db.index.vector.queryNodes('entity_embedding', $vector_k, $question_embedding) YIELD node, score
  RETURN node, null AS mention, 0.0 AS text_score
}
WITH node, mention, text_score
WHERE NOT node:CVT AND NOT node:Literal
RETURN node.id AS id, node.name AS name, node.idx AS idx, mention, text_score,
       vector.similarity.cosine(node.embedding, $question_embedding) AS vector_score,
       COUNT { (node)--() } AS degree
ORDER BY id, mention;
