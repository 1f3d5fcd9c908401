"""Built-in retrievers; importing this package registers them (see `kgdb.models.registry`)."""

from kgdb.models.retrievers import cosine, cosine_dde, rapl, subgraphrag  # noqa: F401
