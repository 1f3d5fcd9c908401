// kgdb schema. Idempotent: every statement uses IF NOT EXISTS.
// Parameters: $dim = embedding dimension of the configured model (e.g. 384 for all-MiniLM-L6-v2).
//   :param dim => 384
CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE;
CREATE CONSTRAINT relation_name IF NOT EXISTS FOR (r:Relation) REQUIRE r.name IS UNIQUE;
CREATE CONSTRAINT question_id IF NOT EXISTS FOR (q:Question) REQUIRE q.id IS UNIQUE;
CREATE CONSTRAINT retrieval_run IF NOT EXISTS FOR (r:Retrieval) REQUIRE r.run IS UNIQUE;
CREATE CONSTRAINT labelling_key IF NOT EXISTS FOR (l:Labelling) REQUIRE l.key IS UNIQUE;
CREATE CONSTRAINT meta_key IF NOT EXISTS FOR (m:KgdbMeta) REQUIRE m.key IS UNIQUE;
// Dense integer ids: retrievers index embedding tables with them.
CREATE INDEX entity_idx IF NOT EXISTS FOR (e:Entity) ON (e.idx);
CREATE INDEX relation_idx IF NOT EXISTS FOR (r:Relation) ON (r.idx);
CREATE INDEX retrieval_qid IF NOT EXISTS FOR (r:Retrieval) ON (r.qid);
CREATE INDEX labelling_qid IF NOT EXISTS FOR (l:Labelling) ON (l.qid);
CREATE INDEX scored_run IF NOT EXISTS FOR ()-[s:SCORED]-() ON (s.run);
CREATE FULLTEXT INDEX entity_names IF NOT EXISTS FOR (e:Entity) ON EACH [e.name]
  OPTIONS {indexConfig: {`fulltext.analyzer`: 'standard-no-stop-words'}};
CREATE VECTOR INDEX entity_embedding IF NOT EXISTS FOR (e:Entity) ON e.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX relation_embedding IF NOT EXISTS FOR (r:Relation) ON r.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine'}};
