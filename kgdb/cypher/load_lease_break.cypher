// Remove a stale load lease: its holder was killed and cannot release it. With $holder set, only
// that holder's lease goes (two loaders that both found the same dead holder cannot remove each
// other's fresh lease); with $holder null (`--break-lease`) whatever lease there is.
// Returns the holder it removed, if any.
// Parameters: $key = lease name, $holder = the stale holder string, or null
//   :param key => 'lease:load'
//   :param holder => null
MATCH (l:KgdbLease:KgdbMeta {key: $key})
WHERE $holder IS NULL OR l.holder = $holder
WITH l, l.holder AS holder
DELETE l
RETURN holder;
