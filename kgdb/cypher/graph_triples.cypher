// Every triple whose head has an idx in [$start, $stop), as [head id, relation, tail id]: one page of
// the whole graph for labelling relation paths in numpy (kgdb/data/relation_paths.py). Retrieval
// bookkeeping (:Retrieval, :Question) is not between two :Entity nodes, so it never appears; the
// write-back's :SCORED copies of triples are (between two entities), so they are left out here.
// Parameters:
//   :param start => 0
//   :param stop => 10000
MATCH (h:Entity)
WHERE h.idx >= $start AND h.idx < $stop
MATCH (h)-[r]->(t:Entity)
WHERE NOT r:SCORED
RETURN collect([h.id, type(r), t.id]) AS triples;
