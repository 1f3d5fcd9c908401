// The databases this server is asked to keep online, and whether they are: `kgdb neo4j start` waits
// until each one is, and says why when one is not (a full disk leaves a database offline while
// Bolt and Browser answer). Run against the `system` database; no parameters.
SHOW DATABASES YIELD name, currentStatus, requestedStatus, statusMessage
WHERE requestedStatus = 'online'
RETURN name, currentStatus, statusMessage
ORDER BY name
