// Readable names of entities by id, whether each is an unnamed compound-value (CVT) node, and whether
// it is a literal value (a date or number, never a head).
// Parameters:
//   :param ids => ['Jamaica', 'm.0abc1']
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN e.id AS id, coalesce(e.name, e.id) AS name, e:CVT AS cvt, e:Literal AS literal;
