// Evidence chains, step 1 (ReG Algorithm 1): the run's scored triples that touch a topic entity.
// direction 'out': the topic entity is the head (chains read anchor → … → target);
// direction 'in':  the topic entity is the tail (the mirror expansion, chains end at the anchor).
// Parameters: :param run => 'subgraphrag-WebQTest-0-1a2b3c4d'   :param direction => 'out'
MATCH (ret:Retrieval {run: $run})-[:TOPIC]->(a:Entity)
MATCH (a)-[s:SCORED {run: $run}]-(x:Entity)
WHERE CASE $direction WHEN 'out' THEN startNode(s) = a ELSE endNode(s) = a END
RETURN a.id AS anchor, x.id AS last, [a.id, x.id] AS nodes, [elementId(s)] AS edges, [s.rank] AS ranks
ORDER BY ranks, anchor;
