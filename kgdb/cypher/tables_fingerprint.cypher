// What identifies the embedding tables of a graph: sizes, largest idx, the embedding model and the
// time the schema was first created (differs between databases that happen to have equal counts).
// `entity_embeddings` counts the entities that have or will get a name vector (every non-CVT
// entity), not the vectors written so far: vectors filled in later (a lazy load, `kgdb embed`,
// retrievals filling them on use) must not change the fingerprint that checkpoints and caches are
// matched by. On a fully embedded graph the two counts are equal, so fingerprints of graphs loaded
// before lazy loading existed stay the same.
CALL () { MATCH (e:Entity) RETURN count(e) AS entities, max(e.idx) AS max_entity_idx }
CALL () { MATCH (e:Entity) WHERE NOT e:CVT RETURN count(e) AS entity_embeddings }
CALL () { MATCH (r:Relation) RETURN count(r) AS relations, max(r.idx) AS max_relation_idx }
CALL () { MATCH (r:Relation) WHERE r.embedding IS NOT NULL RETURN count(r) AS relation_embeddings }
OPTIONAL MATCH (m:KgdbMeta {key: 'schema'})
RETURN entities, max_entity_idx, entity_embeddings, relations, max_relation_idx, relation_embeddings,
       m.embedding_model AS model, m.embedding_dim AS dim, toString(m.created) AS created;
