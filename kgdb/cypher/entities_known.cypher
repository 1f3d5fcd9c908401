// Which of the given ids exist as entities (benchmarks skip topic entities absent from a graph).
// Parameters: :param ids => ['Jamaica', 'Atlantis']
UNWIND $ids AS key
MATCH (e:Entity {id: key})
RETURN e.id AS id ORDER BY id;
