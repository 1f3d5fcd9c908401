"""Question answering on top of retrieval: `ask` (one question), `evaluate` (a question set),
`prompts`, `answers` (parsing replies), `metrics` (Hit, F1, ...) and `reasoners/` (one module each)."""
