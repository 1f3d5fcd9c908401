// Who holds the load lease now (no row: nobody). `--break-lease` reads it first, so it can refuse
// to remove the lease of a load that is still running on this host.
// Parameters: $key = lease name
//   :param key => 'lease:load'
MATCH (l:KgdbLease:KgdbMeta {key: $key})
RETURN l.holder AS holder, toString(l.acquired) AS since;
