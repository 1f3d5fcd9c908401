// Number of nodes in the database (count store). `load --bulk` refuses to replace a non-empty
// database unless told to.
MATCH (n) RETURN count(n) AS nodes;
