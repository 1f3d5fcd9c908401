// Questions already labelled by one method, model and prompt version (what `kgdb label` skips).
// A 'failed' attempt is not final: the next run asks again.
// Parameters:
//   :param qids => ['WebQTrn-0', 'WebQTrn-1']  :param method => 'rapl'
//   :param model => 'gpt-4o-mini'  :param prompt_version => 'label_rapl_v1'
MATCH (l:Labelling)
WHERE l.qid IN $qids AND l.method = $method AND l.model = $model AND l.prompt_version = $prompt_version
  AND l.status IN ['ok', 'none', 'no_candidates']
RETURN l.qid AS qid, l.status AS status;
