// Entity-linking candidates for a question: full-text matches of its candidate mentions (exact phrase
// and fuzzy) plus the nearest entity names by vector, each with the question/name cosine similarity,
// and per mention how many entity names its query matches (its document frequency: "college" is in
// hundreds of names, "greeley" in one), so the caller can prefer the specific mention.
// Python (kgdb/cypher/linking.py) turns these features into the final ranking.
//
// Parameters:
//   :param mentions => [{mention: 'egyptians', query: '"egyptians" OR (egyptians~1)', kind: 'name'},
//                       {mention: 'egyptians', query: '"egypt" OR "egyptia"', kind: 'derived'}]   // Lucene queries;
//                       a derived query holds the names a demonym may derive from (Python keeps exact names)
//   :param initials => [{mention: 'nra', vector: [0.02, ...]}]   // short mentions and their own vectors:
//                       their nearest names, of which Python keeps those with these initials
//   :param initials_k => 20
//   :param per_mention => 10              // full-text hits kept per mention
//   :param pool => 100                    // of the hits after those, the `popular` best-connected join them
//   :param popular => 2
//   :param df_cap => 1000                 // names counted per mention at most
//   :param vector_k => 10                 // nearest names from the entity_embedding vector index
//   :param question_embedding => [0.01, ...]   // unit vector of the question (list of floats)
// Each row's kind says where it came from: name, derived, popular, initials, or vector (the question's
// nearest names, no mention). CVT nodes (opaque ids) and literals are never candidates. A candidate without
// a vector yet (a lazy load) has a null vector_score; the caller fills its vector by idx and computes the
// cosine itself.
CALL () { MATCH (e:Entity) RETURN count(e) AS entities }  // the count store: no scan
CALL () {
  UNWIND $mentions AS m
  CALL (m) {
    // one query per mention: its first hits are the candidates, their number (up to the cap) its frequency
    CALL db.index.fulltext.queryNodes('entity_names', m.query, {limit: $df_cap}) YIELD node, score
    WITH collect({node: node, score: score, kind: m.kind}) AS hits
    // the text score prefers short names: "United States of America" is not among the first hits of
    // "united states"; the best-connected names of the next ones join them
    CALL (hits) {
      UNWIND hits[$per_mention..$pool] AS hit
      WITH hit, hit.node AS n
      WITH hit ORDER BY COUNT { (n)--() } DESC, n.id LIMIT $popular
      RETURN collect(hit {.*, kind: CASE hit.kind WHEN 'name' THEN 'popular' ELSE hit.kind END}) AS popular
    }
    RETURN size(hits) AS df, hits[..$per_mention] + popular AS top
  }
  UNWIND top AS hit
  RETURN hit.node AS node, m.mention AS mention, hit.kind AS kind, hit.score AS text_score, df
  UNION ALL
  UNWIND $initials AS a
  CALL db.index.vector.queryNodes('entity_embedding', $initials_k, a.vector) YIELD node, score
  RETURN node, a.mention AS mention, 'initials' AS kind, 0.0 AS text_score, null AS df
  UNION ALL
  CALL db.index.vector.queryNodes('entity_embedding', $vector_k, $question_embedding) YIELD node, score
  RETURN node, null AS mention, 'vector' AS kind, 0.0 AS text_score, null AS df
}
WITH entities, node, mention, kind, text_score, df
WHERE NOT node:CVT AND NOT node:Literal
RETURN node.id AS id, node.name AS name, node.idx AS idx, mention, kind, text_score, df,
       vector.similarity.cosine(node.embedding, $question_embedding) AS vector_score,
       COUNT { (node)--() } AS degree, entities
ORDER BY id, mention, kind;
