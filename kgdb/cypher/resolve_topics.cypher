// Resolve topic entities given by id (a mid such as m.02mjmr, or a name-id) or by readable name.
// Name matches come from the entity_names full-text index (phrase query), then are filtered to names
// equal to the key (case-sensitive first, then case-insensitive); the best-connected entity wins.
//
// Parameters:
//   :param keys => [{key: 'Barack Obama', phrase: '"Barack Obama"'}]
UNWIND $keys AS k
OPTIONAL MATCH (byid:Entity {id: k.key})
CALL (k, byid) {
  WITH k WHERE byid IS NULL AND k.phrase <> ''
  CALL db.index.fulltext.queryNodes('entity_names', k.phrase, {limit: 200}) YIELD node
  WITH node WHERE toLower(node.name) = toLower(k.key)
  RETURN node ORDER BY (node.name = k.key) DESC, COUNT { (node)--() } DESC, node.id LIMIT 1
  UNION
  WITH k WHERE byid IS NOT NULL OR k.phrase = ''
  RETURN null AS node
}
RETURN k.key AS key, coalesce(byid.id, node.id) AS id;
