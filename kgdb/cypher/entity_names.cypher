// Readable names of entities by id, whether each is an unnamed compound-value (CVT) node, whether
// it is a literal value (a date or number, never a head), and its row in the graph's vector table.
// Parameters:
//   :param ids => ['Jamaica', 'm.0abc1']
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN e.id AS id, coalesce(e.name, e.id) AS name, e:CVT AS cvt, e:Literal AS literal, e.idx AS idx;
