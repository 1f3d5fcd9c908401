"""`--embeddings eager|lazy|auto`: when a load computes the entity name vectors.

Its own tiny module so the CLI can offer the choice without importing numpy or the driver.
Relation texts (a vocabulary of a few thousand) are always embedded at load time.
"""

from __future__ import annotations

from enum import Enum


class Embeddings(str, Enum):
    """eager: every entity name at load time; lazy: none at load (filled on first use);
    auto: eager up to AUTO_EAGER_ENTITIES entities, lazy above."""

    eager = "eager"
    lazy = "lazy"
    auto = "auto"


# ~2-4 minutes of embedding on a 2-core CPU (450-760 names/s); beyond that the load would wait on it.
AUTO_EAGER_ENTITIES = 100_000


def embeds_entities(mode: Embeddings | str, entities: int) -> bool:
    """Whether a load of `entities` entities embeds their names now."""
    mode = Embeddings(mode)
    return mode is Embeddings.eager or (mode is Embeddings.auto and entities <= AUTO_EAGER_ENTITIES)
