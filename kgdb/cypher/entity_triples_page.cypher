// One page of an entity's triples, both directions, of one relation or of all: what the `neighbours`
// graph tool (kgdb mcp) pages through. Ordered by relation, then head and tail id, so pages do not
// overlap. Names fall back to the id (unnamed compound-value nodes). Write-back copies (:SCORED) are
// not relations of the graph. The caller asks for one row more than a page to tell whether another follows.
// Parameters:
//   :param id => 'France'
//   :param relation => null      // a relation type name, or null for every relation
//   :param skip => 0
//   :param limit => 26
MATCH (x:Entity {id: $id})-[r:!SCORED]-(:Entity)
WHERE $relation IS NULL OR type(r) = $relation
WITH r, startNode(r) AS h, endNode(r) AS t
RETURN h.id AS head_id, coalesce(h.name, h.id) AS head, type(r) AS relation, t.id AS tail_id,
       coalesce(t.name, t.id) AS tail
ORDER BY relation, head_id, tail_id
SKIP $skip
LIMIT $limit;
