// Grounding a relation path (RoG/RRP style), one relation at a time: extend every partial path by the
// relationships of type $relation at its last entity, never revisiting an entity. $direction 1 follows
// relationships head -> tail, -1 against them, 0 either way; parallel relationships give separate paths.
// Parameters:
//   :param paths => [{nodes: ['Jamaica'], triples: []}]
//   :param relation => 'location.country.languages_spoken'
//   :param direction => 0
//   :param cap => 1000          // most partial paths kept (in order of their node ids)
UNWIND $paths AS p
MATCH (x:Entity {id: p.nodes[-1]})-[r:$($relation)]-(y:Entity)
WHERE NOT y.id IN p.nodes
  AND ($direction = 0 OR ($direction = 1) = (startNode(r) = x))
WITH p.nodes + y.id AS nodes, p.triples + [[elementId(r), startNode(r).id, type(r), endNode(r).id]] AS triples
RETURN nodes, triples
ORDER BY nodes, triples
LIMIT $cap;
