// How many relationships each entity has (Neo4j reads a dense node's degree without scanning it): the
// RRP path enumeration's hub bound (kgdb/cypher/path_candidates.py) reads it before a hop. Write-back
// copies (:SCORED) count too; they are few.
// Parameters:
//   :param ids => ['Jamaica', 'Kingston']
UNWIND $ids AS id
MATCH (x:Entity {id: id})
RETURN id, COUNT { (x)--() } AS degree;
