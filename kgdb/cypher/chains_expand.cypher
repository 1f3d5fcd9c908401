// Evidence chains, one BFS level (ReG Algorithm 1): extend every chain by one scored triple of the run,
// head-to-tail ('out') or tail-to-head ('in'). As in the paper, an extension never starts at a topic
// entity (those triples seed chains instead) and each (anchor, reached entity) pair is taken once, by
// the first chain in queue order; queue order is the lexicographic order of the chains' edge ranks,
// so the winner is the route through the best-ranked edges. Chains never revisit one of their nodes.
// Parameters:
//   :param run => 'subgraphrag-WebQTest-0-1a2b3c4d'   :param direction => 'out'
//   :param paths => [{anchor: 'Jamaica', last: 'm.0x', nodes: ['Jamaica', 'm.0x'], edges: ['5:…'], ranks: [3]}]
//   :param anchors => ['Jamaica']                      // all topic entities of the run
//   :param visited => [['Jamaica', 'Kingston']]         // (anchor, entity) pairs already reached
UNWIND $paths AS p
MATCH (x:Entity {id: p.last})-[s:SCORED {run: $run}]-(y:Entity)
WHERE CASE $direction WHEN 'out' THEN startNode(s) = x ELSE endNode(s) = x END
  AND NOT x.id IN $anchors
  AND NOT y.id IN p.nodes
  AND NOT [p.anchor, y.id] IN $visited
WITH p, s, y ORDER BY p.ranks, s.rank
WITH p.anchor AS anchor, y, collect({nodes: p.nodes + y.id, edges: p.edges + elementId(s), ranks: p.ranks + s.rank})[0] AS route
RETURN anchor, y.id AS last, route.nodes AS nodes, route.edges AS edges, route.ranks AS ranks
ORDER BY ranks, anchor;
