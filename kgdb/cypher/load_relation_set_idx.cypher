// Assign dense integer ids to Relation nodes. Parameters: $rows = [{key: <name>, idx: 0}, ...]
UNWIND $rows AS row
MATCH (n:Relation {name: row.key})
SET n.idx = row.idx;
