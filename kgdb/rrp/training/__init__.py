"""The training loops of RRP's networks (`kgdb.training.fit` underneath)."""
