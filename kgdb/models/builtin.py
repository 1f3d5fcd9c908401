"""Facts about the built-in retrievers that are needed before torch is imported: a cold `kgdb ask`
whose default retriever has no checkpoint for the graph falls back to the shipped cosine-dde (numpy) without loading
the torch models just to learn that they are trainable. `tests/test_fast_ask.py` checks these facts
against the registered classes, so the registry stays the one source of truth."""

TRAINABLE_BUILTINS = frozenset({"subgraphrag", "rapl", "cosine-dde"})
