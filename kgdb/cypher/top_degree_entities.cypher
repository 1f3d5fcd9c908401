// The best-connected entities (hubs), bookkeeping relationships included in the degree.
// Parameters: :param limit => 10
MATCH (e:Entity)
RETURN e.id AS id, e.name AS name, COUNT { (e)--() } AS degree
ORDER BY degree DESC, id LIMIT $limit;
