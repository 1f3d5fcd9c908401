// Relation type name -> dense Relation.idx (the row of the relation embedding table), for the types a
// fetched subgraph holds; kgdb.cypher.retrieval keeps what it read per connection, so a type travels once.
// A type without a Relation node returns no row (the load that wrote its relationships did not finish).
// Parameters:
//   :param names => ['location.country.capital', 'people.person.nationality']
UNWIND $names AS name
MATCH (r:Relation {name: name})
RETURN r.name AS name, r.idx AS idx;
