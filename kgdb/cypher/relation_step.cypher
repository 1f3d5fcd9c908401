// One step of a relation path from a set of entities: the distinct entities one relationship of type
// $relation away, following it ($direction 1), against it (-1) or either way (0). Set semantics, as the
// planner's labels (kgdb/data/relation_paths.py); the frontier is bounded by $cap.
// Parameters:
//   :param ids => ['Jamaica']
//   :param relation => 'location.country.capital'
//   :param direction => 1
//   :param cap => 200
UNWIND $ids AS id
MATCH (x:Entity {id: id})-[r:$($relation)]-(y:Entity)
WHERE $direction = 0 OR ($direction = 1) = (startNode(r) = x)
WITH DISTINCT y.id AS id
ORDER BY id
LIMIT $cap
RETURN collect(id) AS ids;
