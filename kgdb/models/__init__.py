"""Retrievers over tensors (torch and torch-geometric only; never the database).

`base` (the Retriever interface, SubgraphTensors, TensorTables), `registry` (name -> retriever),
`features` (numpy subgraph -> tensors, PyG batching), `dde`, `retrievers/` (one module each),
`checkpoints`, `metrics`.
"""

import warnings

# torch-geometric 2.8 on torch 2.10+ warns about torch.jit.script at import; kgdb never scripts.
warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.*deprecated", category=FutureWarning)
