// Create triples of mixed relationship types in one batch (dynamic type `$(row.r)`).
// Nodes are found by elementId (returned by load_entities in the same load). The loader only
// sends triples that are not in the database yet (see load_existing_triples), de-duplicated, so
// CREATE never makes a duplicate; different relations between the same pair stay distinct
// relationships. Returns how many were created (the loader checks it).
// Parameters: $rows = [{h: <elementId of head>, r: 'people.person.place_of_birth', t: <elementId of tail>}, ...]
//   In Browser: MATCH (h:Entity {id: 'Barack Obama'}), (t:Entity {id: 'Honolulu'})
//               RETURN elementId(h), elementId(t)   -- then :param rows => [{h: '4:…:0', r: '…', t: '4:…:1'}]
UNWIND $rows AS row
MATCH (h) WHERE elementId(h) = row.h
MATCH (t) WHERE elementId(t) = row.t
CREATE (h)-[:$(row.r)]->(t)
RETURN count(*) AS created;
