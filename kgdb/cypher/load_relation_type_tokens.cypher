// Every relationship type the database has a token for, in use or not: tokens are never freed,
// so these count against the store's relationship-type limit even after their relationships went.
// db.stats.retrieve needs admin rights; without them the caller falls back to db.relationshipTypes().
CALL db.stats.retrieve('TOKENS') YIELD data
RETURN data.relationshipTypes AS types;
