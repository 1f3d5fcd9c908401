// Entity nodes that still need a dense integer idx (in id order), and the next free idx.
MATCH (n:Entity)
WITH max(n.idx) AS top
OPTIONAL MATCH (m:Entity) WHERE m.idx IS NULL
WITH top, m.id AS key ORDER BY key
RETURN coalesce(top, -1) + 1 AS next, collect(key) AS keys;
