"""Scores and features computed with numpy, for answering without torch.

A cold `kgdb ask` spends seconds importing torch and torch-geometric; the shipped models are small
enough to score one question in numpy instead. This package holds what that needs and imports no
torch, no model code and nothing above it (an import-linter contract in pyproject.toml):

- `retrievers`: the numpy twins of the registered retrievers that have one (cosine, cosine-dde);
- `twins`: which registered models have a numpy twin, and which built-ins are trainable;
- `path_ranker`: the RRP path ranker's config, dense feature names and its portable form in numpy;
- `path_tokens`: how RRP's models read a question and a relation path;
- `weights`: a checkpoint's `model.safetensors` read as numpy arrays.

The torch models (`kgdb.models`) and the seam (`kgdb.pipeline`) import from here, never the reverse.
"""
