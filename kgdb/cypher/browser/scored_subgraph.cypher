// Browser: the scored subgraph of one retrieval run, drawn as a graph.
// The Retrieval node links to its topic entities; each SCORED edge carries score and rank
// (set the SCORED caption to `rank` or `score` in Browser's style panel).
//   :param run => 'subgraphrag-WebQTest-0-1a2b3c4d'      (list runs: `kgdb runs list`)
//   :param top => 50                                      // show the best-ranked edges only
MATCH (ret:Retrieval {run: $run})-[topic:TOPIC]->(anchor:Entity)
OPTIONAL MATCH p = (h:Entity)-[s:SCORED {run: $run}]->(t:Entity)
WHERE s.rank <= $top
RETURN ret, topic, anchor, p
ORDER BY s.rank;
