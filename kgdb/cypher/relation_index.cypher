// Relation type name -> dense Relation.idx (rows of the relation embedding table).
MATCH (r:Relation) RETURN r.name AS name, r.idx AS idx ORDER BY idx;
