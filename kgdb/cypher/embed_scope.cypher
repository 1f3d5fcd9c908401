// What plain `kgdb embed` covers: the topic entities of the loaded questions ((:Question)-[:ABOUT]->)
// and their direct neighbours in either direction, the entities every retrieval of those questions
// starts from; only those still without a vector and not CVT. `kgdb embed --all` covers every entity.
// Parameters: none
MATCH (:Question)-[:ABOUT]->(t:Entity)
WITH DISTINCT t
CALL (t) {
  RETURN t AS e
  UNION
  MATCH (t)-[r]-(e:Entity) WHERE NOT type(r) IN ['SCORED', 'ABOUT', 'TOPIC', 'ANSWER']
  RETURN e
}
WITH DISTINCT e WHERE e.embedding IS NULL AND NOT e:CVT
RETURN collect(e.idx) AS idx;
