// One idx page of the entities that still need a name vector (CVT nodes never get one: their names
// are opaque ids), for `kgdb embed` and the load's embedding phase: paging keeps memory flat however
// large the graph. $scope limits it to those idx (plain `kgdb embed`); null means every entity.
// Parameters:
//   :param start => 0   :param stop => 100000   :param scope => null
MATCH (n:Entity) WHERE n.idx >= $start AND n.idx < $stop AND n.embedding IS NULL AND NOT n:CVT
  AND ($scope IS NULL OR n.idx IN $scope)
RETURN n.idx AS idx, coalesce(n.text, n.name) AS text
ORDER BY idx;
