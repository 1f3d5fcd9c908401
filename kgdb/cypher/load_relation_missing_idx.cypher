// Relation nodes that still need a dense integer idx (in name order), and the next free idx.
MATCH (n:Relation)
WITH max(n.idx) AS top
OPTIONAL MATCH (m:Relation) WHERE m.idx IS NULL
WITH top, m.name AS key ORDER BY key
RETURN coalesce(top, -1) + 1 AS next, collect(key) AS keys;
