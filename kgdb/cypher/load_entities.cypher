// Upsert entities. Existing entities keep their name, idx and embedding (loads are idempotent).
// Parameters: $rows = [{id: 'm.02mjmr', name: 'Barack Obama', labels: ['Entity']}, ...]
//   labels is ['Entity'], ['Entity','CVT'] or ['Entity','Literal'].
UNWIND $rows AS row
MERGE (e:Entity {id: row.id})
  ON CREATE SET e.name = row.name
SET e:$(row.labels);
