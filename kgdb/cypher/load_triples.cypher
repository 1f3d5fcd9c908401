// Upsert triples of one relationship type; an identical (h, r, t) is stored once,
// different relations between the same pair stay distinct relationships.
// Parameters: $type = 'people.person.place_of_birth', $rows = [{h: 'm.02mjmr', t: 'm.02hrh0_'}, ...]
UNWIND $rows AS row
MATCH (h:Entity {id: row.h})
MATCH (t:Entity {id: row.t})
MERGE (h)-[:$($type)]->(t);
