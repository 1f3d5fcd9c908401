// Write the joint paths of a several-topic question back as one retrieval run, so Browser shows why each
// candidate was answered: every triple on a candidate's joint path gets a parallel
// (h)-[:SCORED {run, rel, score, rank, answer, topic, hop, topics_reached}]->(t), where score is the share
// of the question's topics that reach the candidate and rank the candidate's place. A triple on the paths
// of several candidates or topics gets one SCORED edge for each. The run is a (:Retrieval) node linked to
// the topics by :TOPIC, as write_scores.cypher writes it, so `kgdb runs` lists and prunes it.
// Parameters:
//   :param run => 'topic-intersection-q1-1a2b3c4d'
//   :param qid => 'q1'     :param question => 'which country borders france and uses the euro?'
//   :param retriever => 'topic-intersection'   :param topics => ['France', 'Euro']
//   :param rows => [{eid: '5:…:17', h: 'France', rel: 'location.location.adjoin_s', t: 'm.02_1', score: 1.0, rank: 1, answer: 'Germany', topic: 'France', hop: 1, reached: 2}]
MERGE (ret:Retrieval {run: $run})
SET ret.qid = $qid, ret.question = $question, ret.retriever = $retriever, ret.k = size($rows),
    ret.created = datetime()
WITH ret
CALL (ret) { MATCH ()-[old:SCORED {run: $run}]->() DELETE old }
CALL (ret) { MATCH (ret)-[old:TOPIC]->() DELETE old }
CALL (ret) { UNWIND $topics AS tid MATCH (e:Entity {id: tid}) MERGE (ret)-[:TOPIC]->(e) }
CALL () {
  UNWIND $rows AS row
  MATCH (h:Entity)-[r]->(t:Entity)
  WHERE elementId(r) = row.eid AND h.id = row.h AND t.id = row.t AND type(r) = row.rel
  CREATE (h)-[:SCORED {run: $run, rel: row.rel, score: row.score, rank: row.rank, answer: row.answer, topic: row.topic,
                       hop: row.hop, topics_reached: row.reached}]->(t)
  RETURN count(*) AS written
}
RETURN ret.run AS run, written;
