// Browser: the evidence chains of a run as paths: walks of 1..2 scored edges of the run that start at
// a topic entity, in either direction (the same edges `kgdb chains RUN` reorganises; that command
// also merges answers and applies ReG's first-route rule, this view shows every route).
//   :param run => 'subgraphrag-WebQTest-0-1a2b3c4d'
MATCH (ret:Retrieval {run: $run})-[:TOPIC]->(anchor:Entity)
MATCH p = (anchor)(()-[s:SCORED WHERE s.run = $run]-()){1,2}(target:Entity)
WHERE target <> anchor
RETURN p, reduce(worst = 1.0e9, x IN s | CASE WHEN x.score < worst THEN x.score ELSE worst END) AS weakest_score,
       [x IN s | x.rel] AS relations
ORDER BY weakest_score DESC, length(p)
LIMIT 100;
