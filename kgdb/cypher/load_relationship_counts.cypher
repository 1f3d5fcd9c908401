// How many relationships of each given type the database holds, from the count store (no scan).
// Types never used are absent from the result (count 0).
// Parameters: $types = ['people.person.place_of_birth', ...]
//   :param types => ['people.person.place_of_birth', 'location.country.capital']
CALL db.stats.retrieve('GRAPH COUNTS') YIELD data
UNWIND data.relationships AS c
WITH c
WHERE c.startLabel IS NULL AND c.endLabel IS NULL AND c.relationshipType IN $types
RETURN c.relationshipType AS type, c.count AS count
ORDER BY type;
