// All relation types with their dense idx and embedding (a few thousand rows at most).
MATCH (r:Relation)
RETURN r.idx AS idx, r.name AS name, r.embedding AS embedding
ORDER BY idx;
