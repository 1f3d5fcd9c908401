// Create triples of mixed relationship types in one batch (dynamic type `$(row.r)`).
// The loader only sends triples that are not in the database yet (see load_existing_triples),
// de-duplicated, so CREATE never makes a duplicate; different relations between the same pair
// stay distinct relationships. Returns how many were created (the loader checks it).
// Parameters: $rows = [{h: 'm.02mjmr', r: 'people.person.place_of_birth', t: 'm.02hrh0_'}, ...]
//   :param rows => [{h: 'Barack Obama', r: 'people.person.place_of_birth', t: 'Honolulu'}]
UNWIND $rows AS row
MATCH (h:Entity {id: row.h})
MATCH (t:Entity {id: row.t})
CREATE (h)-[:$(row.r)]->(t)
RETURN count(*) AS created;
