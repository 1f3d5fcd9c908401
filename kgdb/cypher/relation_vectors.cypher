// The embeddings of some relation types, for their cosine with a question (kgdb.cypher.retrieval: the
// types met at hubs and those that reached a fetch's next frontier, each read once per connection;
// the whole table, ~1k relations x 384 floats, took over a second to read before a first question).
// embedding is null for a relation not embedded yet; a type without a Relation node returns no row.
// Parameters:
//   :param names => ['location.country.capital', 'people.person.nationality']
UNWIND $names AS name
MATCH (r:Relation {name: name})
RETURN r.name AS name, r.embedding AS embedding;
