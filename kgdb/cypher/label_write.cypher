// Store one question's LLM label selection (`kgdb label`), replacing an earlier attempt with the same key.
// Model: (:Question)-[:LABELLED]->(:Labelling {key, qid, method, model, prompt_version, created,
// status, ...})-[:SELECTED]->(:LabelPath {rank, candidate, kind, text, heads, relations, tails}),
// and each LabelPath -[:STARTS_AT]-> / -[:ENDS_AT]-> its first / last entity. A LabelPath names its
// triples by (heads[i], relations[i], tails[i]) in traversal order; it adds no edge between two
// :Entity nodes, so triple counts, fetches and the embedding tables never see labels.
// status: 'ok' (paths selected), 'none' (the LLM chose none), 'no_candidates' (no topic-answer
// path in the subgraph, no LLM call), 'failed' (no usable reply after one retry; `reply` kept).
// Relation targeting (method 'rapl-relations', RAPL's R_*) selects relations instead of paths:
// `relations` / `directions` (+1: a topic is the triple's head, -1: its tail) and the `topics`
// (entity ids) they were read from; `ignored` counts reply items that named no candidate.
//
// Parameters:
//   :param key => 'WebQTrn-0|rapl|gpt-4o-mini|label_rapl_v1'
//   :param qid => 'WebQTrn-0'  :param method => 'rapl'  :param model => 'gpt-4o-mini'
//   :param prompt_version => 'label_rapl_v1'  :param status => 'ok'  :param error => null
//   :param reply => 'ans: Path 1'  :param candidates => 12  :param raw_candidates => 30
//   :param calls => 1  :param prompt_tokens => 900  :param completion_tokens => 40
//   :param paths => [{rank: 1, candidate: 1, kind: 'path', text: 'Jamaica → location.country.languages_spoken → Jamaican English',
//                     start: 'Jamaica', end: 'Jamaican English', heads: ['Jamaica'], relations: ['location.country.languages_spoken'], tails: ['Jamaican English']}]
//   :param relations => []  :param directions => []  :param topics => []  :param ignored => 0
MERGE (l:Labelling {key: $key})
SET l.qid = $qid, l.method = $method, l.model = $model, l.prompt_version = $prompt_version,
    l.status = $status, l.error = $error, l.reply = $reply, l.candidates = $candidates,
    l.raw_candidates = $raw_candidates, l.calls = $calls, l.prompt_tokens = $prompt_tokens,
    l.completion_tokens = $completion_tokens, l.selected = size($paths) + size($relations), l.created = datetime(),
    l.relations = $relations, l.directions = $directions, l.topics = $topics, l.ignored = $ignored
WITH l
CALL (l) { MATCH (l)-[:SELECTED]->(old:LabelPath) DETACH DELETE old }
CALL (l) { MATCH (q:Question {id: $qid}) MERGE (q)-[:LABELLED]->(l) }
CALL (l) {
  UNWIND $paths AS p
  CREATE (l)-[:SELECTED]->(lp:LabelPath {qid: $qid, method: $method, rank: p.rank, candidate: p.candidate, kind: p.kind,
                                         text: p.text, heads: p.heads, relations: p.relations, tails: p.tails})
  WITH lp, p
  CALL (lp, p) { MATCH (s:Entity {id: p.start}) CREATE (lp)-[:STARTS_AT]->(s) }
  CALL (lp, p) { MATCH (e:Entity {id: p.end}) CREATE (lp)-[:ENDS_AT]->(e) }
  RETURN count(lp) AS written
}
RETURN l.key AS key, written;
