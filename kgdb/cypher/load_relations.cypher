// Upsert one Relation node per relationship type.
// Parameters: $rows = [{name: 'people.person.place_of_birth', text: 'people person place of birth'}, ...]
UNWIND $rows AS row
MERGE (r:Relation {name: row.name})
  ON CREATE SET r.text = row.text;
