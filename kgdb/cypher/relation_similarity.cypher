// Cosine similarity of each relationship type to the question (Relation.embedding), used to expand
// the most question-like part of a large BFS frontier first.
// Parameters:
//   :param types => ['location.country.capital', 'people.person.nationality']
//   :param question_embedding => [0.1, 0.0, ...]   // unit vector of the question
UNWIND $types AS t
OPTIONAL MATCH (r:Relation {name: t})
RETURN t AS relation, coalesce(vector.similarity.cosine(r.embedding, $question_embedding), 0.0) AS sim;
