"""Data without a database or torch: question sets and their fixed splits (`questions`), the
on-disk cache of labelled subgraphs (`cache`), and pure-numpy labelling (`labels`)."""
