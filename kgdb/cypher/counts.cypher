// Size of the loaded graph: what `kgdb load` and `kgdb status` report.
CALL () { MATCH (e:Entity) RETURN count(e) AS entities }
CALL () { MATCH (e:CVT) RETURN count(e) AS cvt }
CALL () { MATCH (e:Literal) RETURN count(e) AS literals }
CALL () { MATCH (e:Entity) WHERE e.embedding IS NOT NULL RETURN count(e) AS entity_embeddings }
CALL () { MATCH (r:Relation) RETURN count(r) AS relations }
CALL () { MATCH (r:Relation) WHERE r.embedding IS NOT NULL RETURN count(r) AS relation_embeddings }
CALL () { MATCH (:Entity)-[t]->(:Entity) WHERE NOT t:SCORED RETURN count(t) AS triples }
CALL () { MATCH (q:Question) RETURN count(q) AS questions }
RETURN entities, cvt, literals, entity_embeddings, relations, relation_embeddings, triples, questions;
