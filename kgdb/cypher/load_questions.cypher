// Upsert questions and link each to its topic entities (matched by Entity.id; unknown topics are
// not created). Idempotent: properties are overwritten, ABOUT links merged.
// Parameters: $rows = [{id, text, answers: [..], answer_entities: [..], topics: [..], hop: 2 or null}]
//   :param rows => [{id: 'demo-1', text: 'what is the capital of france?', answers: ['Paris'], answer_entities: ['Paris'], topics: ['France'], hop: 1}]
// Returns the number of (question, topic) links that found their entity.
UNWIND $rows AS row
MERGE (q:Question {id: row.id})
SET q.text = row.text, q.answers = row.answers, q.answer_entities = row.answer_entities,
    q.topics = row.topics, q.hop = row.hop
WITH q, row
CALL (q, row) {
  UNWIND row.topics AS topic
  WITH DISTINCT topic
  MATCH (e:Entity {id: topic})
  MERGE (q)-[:ABOUT]->(e)
  RETURN count(e) AS linked
}
RETURN sum(linked) AS linked;
