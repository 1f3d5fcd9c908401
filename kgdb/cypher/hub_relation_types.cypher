// The relationship types met at the hubs among some entities: those with more than $cap relationships,
// of which one subgraph.cypher level keeps only the $cap triples whose relation is most similar to the
// question. kgdb.cypher.retrieval runs it before such a level so that $relation_sims holds exactly
// these types. Types only: a hub's relationships are scanned without looking at the nodes at their
// other end (a relationship to a non-Entity node adds a type no triple has, which costs nothing).
// Parameters:
//   :param ids => ['Jamaica']             // Entity.id values (topic entities)
//   :param idx => []                       // Entity.idx values (later levels: the frontier's hubs)
//   :param cap => 100                      // the per-node cap of the level
CALL () {
  UNWIND $ids AS key MATCH (n:Entity {id: key}) RETURN n
  UNION
  UNWIND $idx AS i MATCH (n:Entity {idx: i}) RETURN n
}
WITH n WHERE COUNT { (n)--() } > $cap
MATCH (n)-[r]-() WHERE NOT r:SCORED
RETURN collect(DISTINCT type(r)) AS types;
