"""Fetch limits shared by the database layer and the CLI (a module of constants: the CLI shows
them in --help without importing numpy or the Neo4j driver)."""

MAX_HOPS = 4
# Most triples expanded from one node; beyond it the triples whose relation is most similar to the
# question are kept (see subgraph.cypher). Chosen on validation splits against 500, the value before:
# with cosine and the shipped cosine-dde, 100 gave the same or a higher answer recall@100 on WebQSP,
# the WebQSP + FB15k-237 distractor graph and MetaQA 2/3-hop (fewer same-relation distractors compete
# for the top 100), lost 1 of 1,228 MetaQA 1-hop questions, and fetched up to 6x faster on dense
# graphs. Losses: RAPL on WebQSP (0.958 -> 0.949) and cosine-dde on the synthetic 10M graph (0.518 ->
# 0.500), whose answers are in fewer subgraphs. Figures and commands: docs/retrieval.md, "The default cap". A
# checkpoint serves at the cap chosen for it on validation (`fetch.inference_cap`), else at the cap
# it was trained with.
DEFAULT_CAP = 100
# Frontier entities expanded per transaction at levels 2+: the server memory a fetch needs at once is
# bounded by FETCH_CHUNK x cap triples, whatever the hub or the depth (KGDB_FETCH_CHUNK).
FETCH_CHUNK = 256
# Most triples one subgraph may hold: beyond it the least question-like part of the frontier is not
# expanded and the subgraph says it was truncated (KGDB_FETCH_MAX_TRIPLES).
FETCH_MAX_TRIPLES = 100_000
# Relationships of hubs (degree above the cap) the server may scan per level at levels 2+: keeping
# `cap` triples of a hub costs a scan of all its relationships (on the 10M-triple synthetic graph a
# 2-hop frontier held 178 hubs with 680k relationships: 3.4 s for one level), so hubs are expanded, the
# most question-like first, while their degrees sum to at most this; a hub above it alone is never
# expanded beyond the first level. Topic entities always are (KGDB_FETCH_HUB_SCAN). It replaced a
# count of hubs (8): on validation splits 10,000 gave the answer recall of unbounded hubs on WebQSP,
# the distractor graph and MetaQA 1/2/3-hop (5,000 lost MetaQA 3-hop, as did 4 hubs) and, on the
# 50M-triple synthetic graph, a higher recall than 8 hubs at the latency of 4 (docs/scale.md, "Hubs").
# The RRP path ranker's enumeration of relation paths reads the same bound beyond the topics' hop
# (hubs there: more relationships than one step keeps, fewest first; `path_candidates.bound_hubs`):
# on the distractor graph it took RRP's p50 / p95 from ~125 / 344 to ~80 / 248 ms, val answers unchanged.
FETCH_HUB_SCAN = 10_000
# Relation paths the RRP path ranker's enumeration continues per hop beyond the first, the most
# question-like first (the largest question-relation cosine of their steps; `path_candidates.best_prefixes`).
# Every path is still a candidate; only the others' continuations are not listed. On the 10M-triple
# synthetic graph a question had 29k candidates and 1.7 s of enumeration without it. The smallest of
# 16, 32 and 64 whose val Hit@1 and Macro-F1 equal the unbounded ones on WebQSP (subset and distractor
# graph) and MetaQA 1/2/3-hop (KGDB_RRP_PREFIXES; docs/rrp.md, "RRP on any graph").
RRP_PREFIXES = 16
# Relationships of one step (relation and direction) from one entity that RRP's enumeration, grounding and
# beam decoding read whole. A bigger step, a hub's in a real Freebase subset ("people with this nationality": millions),
# keeps a deterministic sample of its ends instead: those whose idx is a multiple of a stride that leaves
# about 4 x the frontier cap of them, of which the first `cap` in id order go on as usual. Reading such a
# step whole held every end at once: a question about a country with 1M nationality edges failed after
# 25 s with a transaction-memory error (docs/scale.md, "Hub topics"). No step of the WebQSP subset, the
# distractor graph, MetaQA or the 50M-triple synthetic graph is that big, so no figure changed
# (KGDB_RRP_STEP_SCAN).
RRP_STEP_SCAN = 100_000
# Degree from which Neo4j groups a node's relationships by type (`db.relationship_grouping_threshold`;
# KGDB_NEO4J_DENSE_THRESHOLD), written into the local server's neo4j.conf, which neo4j-admin import
# reads too. Neo4j's default, 50, made relationship linking take 26 of the 37 minutes of a 50M-triple
# bulk load on 2 cores (192k grouped nodes over 1,353 relation types; 1,000 still left 15.7k grouped
# nodes and 6.5 min in the first of two linking passes); with no node above 10,000 on that graph the
# whole import took 3.2 min. The grouping only speeds typed expansion from a node, which is
# hardly slower below 10,000 (one typed hop from hubs of median degree 3.1k: 2.0-2.3 ms ungrouped,
# 2.3-2.5 ms grouped); a fetch scans all of a hub's relationships either way. Nodes above it, the
# mega-hubs of a real Freebase subset, stay grouped.
DENSE_THRESHOLD = 10_000

# Relation paths per topic joined on the answer when a question names several topic entities
# (kgdb.cypher.topic_intersection): each topic's best answer-bearing paths, planned from it alone.
# Chosen on a ComplexWebQuestions train sample (300 questions, Hit@1 with 1 / 3 / 5 / 8 / 12 / 20
# paths: 30.00 / 35.33 / 38.00 / 39.33 / 41.00 / 41.00; the smallest of the best). 0: one joint plan only
# (KGDB_RRP_JOINT_PATHS).
RRP_JOINT_PATHS = 12

# Longest line (with its line end) the readers of triple and text lines take: TSV, CSV, N-Triples, MetaQA
# `qa.txt`, mid lists. Their values are entity ids and relation names, capped at 4,000 bytes for Neo4j's
# indexes, or names and literal values of at most a few KB (the longest line of the WebQSP, CWQ, MetaQA
# and FB15k-237 sources is 3,154 bytes). A longer line is refused while it is read, in chunks of this
# size: a 2 GB file of one line was read whole before it was refused (4.4 GB resident).
MAX_LINE_BYTES = 1 << 20
# Longest line of a JSONL file, whose one line is a whole record: a RoG row carries a question's whole
# subgraph (thousands of triples). The longest line of the shipped WebQSP questions is 123 KB.
MAX_RECORD_BYTES = 16 << 20
