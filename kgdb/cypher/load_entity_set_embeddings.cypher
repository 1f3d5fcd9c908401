// Store Entity embeddings as float vectors. Parameters: $rows = [{idx: 0, embedding: [0.1, ...]}, ...]
UNWIND $rows AS row
MATCH (n:Entity {idx: row.idx})
CALL db.create.setNodeVectorProperty(n, 'embedding', row.embedding);
