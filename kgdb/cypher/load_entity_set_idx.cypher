// Assign dense integer ids to Entity nodes. Parameters: $rows = [{key: <id>, idx: 0}, ...]
UNWIND $rows AS row
MATCH (n:Entity {id: row.key})
SET n.idx = row.idx;
