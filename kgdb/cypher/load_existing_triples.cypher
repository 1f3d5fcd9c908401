// Triples already stored from the given head entities, limited to the given relationship types
// (kgdb bookkeeping types such as SCORED are never among them). The loader subtracts these
// before it CREATEs, which makes reloading and resuming after a kill exact.
// Parameters: $heads = entity ids, $types = relationship types
//   :param heads => ['Barack Obama']
//   :param types => ['people.person.place_of_birth']
UNWIND $heads AS head
MATCH (h:Entity {id: head})-[r]->(t:Entity)
WHERE type(r) IN $types
RETURN h.id AS h, type(r) AS r, t.id AS t;
