// Store entity name vectors only where the entity still has none, and say which rows were written.
// Idempotent and safe next to other writers (a load, `kgdb embed`, retrievals filling vectors on
// use): setting and removing a dummy property first takes the node's write lock, so the NULL test
// below reads the value committed by whoever held the lock before (Neo4j's documented way to
// avoid lost updates); a vector is written once and counted once.
// Parameters:
//   :param rows => [{idx: 0, embedding: [0.1, 0.2, 0.3]}]
UNWIND $rows AS row
MATCH (n:Entity {idx: row.idx})
SET n._kgdb_lock = true
REMOVE n._kgdb_lock
WITH n, row WHERE n.embedding IS NULL
CALL db.create.setNodeVectorProperty(n, 'embedding', row.embedding)
RETURN collect(n.idx) AS written;
