// An entity's relations, with how many of its relationships each has by direction: the overview the
// `neighbours` graph tool (kgdb mcp) gives an agent before a page of triples. direction 1: the entity
// is the head, -1: the tail. Write-back copies (:SCORED) are not relations of the graph. Most
// relationships first; $limit rows at most (the caller asks for one more to tell that some were left off).
// Parameters:
//   :param id => 'France'
//   :param limit => 201
MATCH (x:Entity {id: $id})-[r:!SCORED]-(:Entity)
WITH type(r) AS relation, CASE WHEN startNode(r) = x THEN 1 ELSE -1 END AS direction, count(*) AS count
RETURN relation, direction, count
ORDER BY count DESC, relation, direction
LIMIT $limit;
