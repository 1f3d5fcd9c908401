// One page of entity embeddings by idx (CVT nodes and others without a vector are skipped: their rows
// stay zero). Parameters: :param start => 0   :param stop => 10000   (idx range [start, stop))
MATCH (e:Entity) WHERE e.idx >= $start AND e.idx < $stop AND e.embedding IS NOT NULL
RETURN collect(e.idx) AS idx, collect(e.embedding) AS embedding;
