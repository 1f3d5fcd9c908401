// `kgdb repair` / `kgdb load --dedupe`: delete duplicate (h, r, t) relationships, keeping one.
// Duplicates come from loads that ran at the same time before the load lease existed; the data
// model stores an identical triple once. kgdb's own SCORED edges are left alone (several runs may
// score the same triple). One transaction per 1,000 head entities keeps memory bounded.
// Run as an auto-commit transaction (CALL { } IN TRANSACTIONS). No parameters.
MATCH (h:Entity)
CALL (h) {
  MATCH (h)-[r]->(t:Entity)
  WHERE type(r) <> 'SCORED'
  WITH t, type(r) AS rel, collect(r) AS rels
  WHERE size(rels) > 1
  UNWIND tail(rels) AS extra
  DELETE extra
  RETURN count(*) AS deleted
} IN TRANSACTIONS OF 1000 ROWS
RETURN sum(deleted) AS deleted;
