// The store format of a database (e.g. 'record-aligned-1.1'): it decides how many relationship
// types the database can hold.
// Parameters: $database = the database name
//   :param database => 'neo4j'
SHOW DATABASES YIELD name, store
WHERE name = $database
RETURN store;
