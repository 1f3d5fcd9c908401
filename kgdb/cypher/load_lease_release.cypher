// Give the load lease back at the end of a load (also after an error). Only the holder's own
// lease is deleted, so a loader whose lease was broken cannot remove its successor's.
// Parameters: $key = lease name, $holder = the holder string used to take it
//   :param key => 'lease:load'
//   :param holder => 'myhost pid 1234 started 2025-01-01T10:00:00 token ab12'
MATCH (l:KgdbLease:KgdbMeta {key: $key})
WHERE l.holder = $holder
DELETE l
RETURN count(l) AS released;
