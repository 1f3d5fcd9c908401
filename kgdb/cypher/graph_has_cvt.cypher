// Whether the graph has compound-value (CVT) nodes, from the count store (no scan). The RRP path
// ranker's candidates go 2 hops plus a third through a CVT node on such a graph (Freebase), and 3
// plain hops on a graph without them (MetaQA), where a third hop is not otherwise reachable.
MATCH (n:CVT) RETURN count(n) > 0 AS has_cvt;
