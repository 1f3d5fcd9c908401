// The relationship types (with direction) leaving a set of entities: the next steps a relation-path
// planner can choose. direction 1 = the entity is the head, -1 = the tail.
// Parameters:
//   :param ids => ['Jamaica']
//   :param limit => 1000
UNWIND $ids AS id
MATCH (x:Entity {id: id})-[r]-(:Entity)
WITH DISTINCT type(r) AS relation, CASE WHEN startNode(r) = x THEN 1 ELSE -1 END AS direction
RETURN relation, direction
ORDER BY relation, direction
LIMIT $limit;
