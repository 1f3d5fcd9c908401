// Repair a half-made schema: two loads that created the schema at the same moment, before the
// KgdbMeta.key constraint existed, could both MERGE a (:KgdbMeta {key: 'schema'}) node, and then
// the constraint cannot be created. Keeps the oldest record, deletes the others.
// Returns how many it deleted (0 on a healthy graph).
MATCH (m:KgdbMeta {key: 'schema'})
WITH m ORDER BY m.created, elementId(m)
WITH collect(m) AS records
UNWIND records[1..] AS extra
DELETE extra
RETURN count(*) AS removed;
