// The scored triples of one run, best rank first (the edges evidence chains are built from).
// Parameters: :param run => 'subgraphrag-WebQTest-0-1a2b3c4d'
MATCH (ret:Retrieval {run: $run})
OPTIONAL MATCH (ret)-[:TOPIC]->(a:Entity)
WITH ret, collect(a.id) AS anchors
OPTIONAL MATCH (h:Entity)-[s:SCORED {run: $run}]->(t:Entity)
WITH ret, anchors, h, s, t ORDER BY s.rank
RETURN ret.question AS question, ret.qid AS qid, anchors,
       collect(CASE WHEN s IS NOT NULL THEN {eid: elementId(s), h: h.id, h_name: h.name, rel: s.rel, t: t.id,
                    t_name: t.name, score: s.score, rank: s.rank} END) AS edges;
