// Entity nodes without an embedding, by idx (CVT nodes are never embedded: their names are opaque ids).
MATCH (n:Entity) WHERE n.embedding IS NULL AND NOT n:CVT
RETURN n.idx AS idx, coalesce(n.text, n.name) AS text
ORDER BY idx;
