// Size of the loaded graph: what `kgdb load` and `kgdb status` report.
// Triples come from the count store (no scan): every relationship leaving an :Entity is a triple or
// a :SCORED write-back copy (CVT and literal nodes are :Entity too).
CALL () { MATCH (e:Entity) RETURN count(e) AS entities }
CALL () { MATCH (e:CVT) RETURN count(e) AS cvt }
CALL () { MATCH (e:Literal) RETURN count(e) AS literals }
CALL () { MATCH (e:Entity) WHERE e.embedding IS NOT NULL RETURN count(e) AS entity_embeddings }
CALL () { MATCH (r:Relation) RETURN count(r) AS relations }
CALL () { MATCH (r:Relation) WHERE r.embedding IS NOT NULL RETURN count(r) AS relation_embeddings }
CALL () { MATCH (:Entity)-[t]->() RETURN count(t) AS out }
CALL () { MATCH (:Entity)-[t:SCORED]->() RETURN count(t) AS scored }
CALL () { MATCH (q:Question) RETURN count(q) AS questions }
RETURN entities, cvt, literals, entity_embeddings, relations, relation_embeddings, out - scored AS triples, questions;
