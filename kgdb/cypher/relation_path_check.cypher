// Why a relation path grounded to nothing: is the topic an entity, and which of the relations are
// not relationship types of the graph? (Run only after an empty grounding, so it costs nothing on
// the happy path.)
// Parameters:
//   :param topic => 'Jamaica'
//   :param relations => ['location.country.capital', 'no.such.relation']
OPTIONAL MATCH (e:Entity {id: $topic})
WITH e IS NOT NULL AS topic_known
UNWIND $relations AS name
OPTIONAL MATCH (r:Relation {name: name})
RETURN topic_known, collect(DISTINCT CASE WHEN r IS NULL THEN name END) AS unknown_relations;
