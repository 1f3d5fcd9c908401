// Write back the top-K scored triples of one question as one retrieval run.
// Each kept triple (h)-[r]->(t) gets a parallel (h)-[:SCORED {run, rel, score, rank}]->(t); the run
// is a (:Retrieval) node linked to its topic entities by :TOPIC. Runs never share SCORED edges, so
// several questions, retrievers and runs coexist; writing the same run again replaces it.
//
// Parameters:
//   :param run => 'subgraphrag-WebQTest-0-1a2b3c4d'
//   :param qid => 'WebQTest-0'     :param question => 'what does jamaican people speak?'
//   :param retriever => 'subgraphrag'   :param k => 100   :param topics => ['Jamaica']
//   :param rows => [{eid: '5:…:17', h: 'Jamaica', rel: 'location.country.languages_spoken', t: 'Jamaican English', score: 0.93, rank: 1}]
MERGE (ret:Retrieval {run: $run})
SET ret.qid = $qid, ret.question = $question, ret.retriever = $retriever, ret.k = $k,
    ret.created = datetime()
WITH ret
CALL (ret) { MATCH ()-[old:SCORED {run: $run}]->() DELETE old }
CALL (ret) { MATCH (ret)-[old:TOPIC]->() DELETE old }
CALL (ret) { UNWIND $topics AS tid MATCH (e:Entity {id: tid}) MERGE (ret)-[:TOPIC]->(e) }
CALL () {
  UNWIND $rows AS row
  MATCH (h:Entity)-[r]->(t:Entity)
  WHERE elementId(r) = row.eid AND h.id = row.h AND t.id = row.t AND type(r) = row.rel
  CREATE (h)-[:SCORED {run: $run, rel: row.rel, score: row.score, rank: row.rank}]->(t)
  RETURN count(*) AS written
}
RETURN ret.run AS run, written;
