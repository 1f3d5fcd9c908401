// Records which embedding model and dimension the graph was built with.
// Parameters: $model (string), $dim (integer).
MERGE (m:KgdbMeta {key: 'schema'})
ON CREATE SET m.embedding_model = $model, m.embedding_dim = $dim, m.created = datetime()
RETURN m.embedding_model AS model, m.embedding_dim AS dim;
