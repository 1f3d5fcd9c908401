// The relationship types that hold relationships now (a lower bound of the tokens taken; used
// where db.stats.retrieve is not allowed).
CALL db.relationshipTypes() YIELD relationshipType
RETURN collect(relationshipType) AS types;
