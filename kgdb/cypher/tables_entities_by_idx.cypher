// The entity table rows one use touches, by idx: the vectors the graph has, and for the rest whether
// they are CVT nodes (never embedded) or still waiting for a vector (a lazy load), with the text
// to embed (the same text rule as entity_missing_embeddings_page). Parallel lists, one row.
// Parameters:
//   :param idx => [0, 1, 2]
UNWIND $idx AS i
MATCH (e:Entity {idx: i})
WITH collect(CASE WHEN e.embedding IS NOT NULL THEN e END) AS have,
     collect(CASE WHEN e.embedding IS NULL THEN e END) AS without
RETURN [e IN have | e.idx] AS idx, [e IN have | e.embedding] AS embedding,
       [e IN without | e.idx] AS missing_idx, [e IN without | e:CVT] AS missing_cvt,
       [e IN without | coalesce(e.text, e.name)] AS missing_text;
