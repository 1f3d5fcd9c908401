// Take the load lease: "one loader per database", enforced by the database itself.
// The lease is a (:KgdbMeta:KgdbLease {key}) node; MERGE under the unique KgdbMeta.key constraint
// lets exactly one of two concurrent loaders create it, the other finds it and sees the holder.
// `ours` is true only for the loader whose holder string is stored.
// Parameters: $key = lease name, $holder = who takes it (host, pid, start time, token)
//   :param key => 'lease:load'
//   :param holder => 'myhost pid 1234 started 2025-01-01T10:00:00 token ab12'
MERGE (l:KgdbMeta {key: $key})
  ON CREATE SET l:KgdbLease, l.holder = $holder, l.acquired = datetime()
RETURN l.holder AS holder, toString(l.acquired) AS since, l.holder = $holder AS ours;
