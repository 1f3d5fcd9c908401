"""User-facing errors: the CLI prints their message as one line, without a traceback."""


class KgdbError(Exception):
    """An error whose message tells the user what went wrong and how to fix it."""


class InputError(KgdbError):
    """Bad input: names the file and line (or the parameter) at fault."""

    def __init__(self, message: str, *, path: object | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line


class DatabaseError(KgdbError):
    """Neo4j is unreachable, refuses the credentials, or rejects a query."""


class TransactionMemoryError(DatabaseError):
    """The server refused a query for its per-transaction memory limit."""


class ClosedError(KgdbError):
    """A connection (`kgdb.connect`) was used after it, or the `neo4j.Driver` it was given, was closed."""


class LLMUnavailableError(KgdbError):
    """The LLM endpoint stopped answering (or refuses every request): a run that needs it stops, and
    resumes once it is back, as it does for a lost database."""
