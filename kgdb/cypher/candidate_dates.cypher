// The dates and numbers attached to candidate answers: literal values one relationship away, or two away
// through a CVT node (a marriage's from/to, a championship's date, a position's start), with the
// relation(s) that hold them. kgdb.pipeline.constraints reads years from them for "before / after / in
// <year>" and for "last / first / latest / earliest" (argmax / argmin). A candidate's own name holding a
// year ("2011 Stanley Cup Finals") is read by that module, not here.
// Parameters:
//   :param ids => ['m.0kgdb_marriage_obama', 'Michelle Obama']
//   :param per_entity => 200
UNWIND $ids AS id
MATCH (e:Entity {id: id})
CALL (e) {
  CALL (e) {
    MATCH (e)-[r]-(v:Literal)
    RETURN type(r) AS relation, v.id AS value, null AS via
    UNION
    MATCH (e)-[r1]-(c:CVT)-[r2]-(v:Literal)
    RETURN type(r1) + ' / ' + type(r2) AS relation, v.id AS value, c.id AS via
  }
  WITH relation, value, via
  ORDER BY relation, value
  // an aggregate returns one row even for a candidate without values, so every known id is answered
  RETURN collect({relation: relation, value: value, via: via})[..$per_entity] AS values
}
RETURN id, values;
