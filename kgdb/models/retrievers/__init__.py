"""Built-in retrievers; `kgdb.models.registry` registers `BUILTIN` on its first look-up."""

from kgdb.models.retrievers.cosine import CosineRetriever
from kgdb.models.retrievers.cosine_dde import CosineDDE
from kgdb.models.retrievers.rapl import RAPL
from kgdb.models.retrievers.subgraphrag import SubgraphRAG

BUILTIN = (CosineRetriever, CosineDDE, SubgraphRAG, RAPL)
