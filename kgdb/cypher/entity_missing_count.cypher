// How many entities still need a name vector (CVT nodes never get one), and the idx range to page.
// Parameters: none
MATCH (n:Entity) WHERE n.embedding IS NULL AND NOT n:CVT
RETURN count(n) AS missing, min(n.idx) AS min_idx, max(n.idx) AS max_idx;
