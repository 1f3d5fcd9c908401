// What the graph itself says a candidate answer is: the relationship types it takes part in, split by
// side (a head of `people.person.place_of_birth` is a person, its tail a place), and whether it is a
// literal value or a CVT node. kgdb.pipeline.constraints learns on training questions which of these
// the answers of "where" / "who" / "what college" questions carry, instead of a hand list per dataset.
// A hub's types are read from its first $per_entity relationships (in store order) only.
// Parameters:
//   :param ids => ['Honolulu', 'Barack Obama']
//   :param per_entity => 500
UNWIND $ids AS id
MATCH (e:Entity {id: id})
CALL (e) {
  MATCH (e)-[r]-(:Entity)
  WITH r LIMIT $per_entity
  RETURN collect(DISTINCT CASE WHEN startNode(r) = e THEN 'out:' ELSE 'in:' END + type(r)) AS relations
}
RETURN id, e:Literal AS literal, e:CVT AS cvt, relations;
