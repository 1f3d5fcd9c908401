"""A real LLM reading kgdb's evidence, per prompt format, beside the answerer without an LLM.

    kgdb llm start        # SmolLM2-135M-Instruct on 127.0.0.1; prints the KGDB_LLM_* settings
    KGDB_NEO4J_URI=... KGDB_LLM_BASE_URL=... KGDB_LLM_MODEL=... KGDB_LLM_CONTEXT=8192 .venv/bin/python \
        benchmarks/llm_formats.py --questions /path/to/webqsp/questions.jsonl --split val --n 100 \
        --formats triples,chains,paths,candidates --out runs/llm-formats

Every format answers the same first N questions of the split through `AskPipeline` (retrieval:
the default retriever, top --k), scored as `kgdb eval qa` scores (`question_record`). Per format it
prints Hit / Hit@1 / Macro-F1, the share of replies that yielded no answer and no refusal
("unparsed"), the share of printed answers that are not evidence entities, how answers were read
(schema / ans-line / free-text), prompt tokens and seconds per question. `none` is the answerer
without an LLM (the extractive reasoner over the same evidence). Choose formats on val only.
Per-question records go to --out/<format>.jsonl (a rerun skips questions already there).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--split", default="val")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--retriever", default="cosine-dde")
    ap.add_argument("--formats", default="none,triples,chains,paths,candidates")
    ap.add_argument("--prompt-version", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("runs/llm-formats"))
    args = ap.parse_args()

    from kgdb.config import load_settings
    from kgdb.cypher import Graph
    from kgdb.cypher.linking import existing_entities
    from kgdb.data.questions import read_questions, subsample
    from kgdb.qa.ask import AskPipeline
    from kgdb.qa.evaluate import question_record
    from kgdb.qa.metrics import MatchRules
    from kgdb.qa.reasoners.candidates import CandidatesReasoner
    from kgdb.qa.reasoners.openai_compatible import OpenAIReasoner

    settings = load_settings()
    questions = subsample(read_questions(args.questions).split(args.split), limit=args.n)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with Graph(settings) as graph:
        for fmt in args.formats.split(","):
            if fmt == "none":
                reasoner, evidence_fmt = "extractive", "triples"
            elif fmt == "candidates":
                reasoner, evidence_fmt = (
                    CandidatesReasoner(OpenAIReasoner.from_settings(settings), settings=settings),
                    "triples",
                )
            else:
                reasoner, evidence_fmt = OpenAIReasoner.from_settings(settings), fmt
            pipe = AskPipeline(
                graph,
                settings,
                retriever=args.retriever,
                reasoner=reasoner,
                k=args.k,
                fmt=evidence_fmt,
                write=evidence_fmt != "triples",
                prompt_version=args.prompt_version,
            )
            recorder = _Recorder(pipe.reasoner)
            pipe.reasoner = recorder
            path = args.out / f"{fmt}.jsonl"
            done = {json.loads(x)["qid"]: json.loads(x) for x in path.read_text().splitlines()} if path.exists() else {}
            with path.open("a", encoding="utf-8") as fh:
                for q in questions:
                    if q.id in done:
                        continue
                    start = time.perf_counter()
                    rec = question_record(pipe, q, MatchRules(), existing_entities(graph, q.answers))
                    rec["seconds"] = time.perf_counter() - start
                    reasoning, recorder.last = recorder.last, None
                    rec["modes"] = getattr(reasoning, "modes", {})
                    rec["dropped"] = getattr(reasoning, "dropped", [])
                    rec["budget"] = getattr(reasoning, "budget", {})
                    done[q.id] = rec
                    fh.write(json.dumps(rec, default=str) + "\n")
                    fh.flush()
                    print(
                        f"{fmt} {q.id} hit1={rec['scores'].get('hit1')} answers={rec.get('answers')[:3]} "
                        f"{rec['seconds']:.1f}s",
                        flush=True,
                    )
            rows.append(_summary(fmt, [done[q.id] for q in questions if q.id in done]))
    print(
        f"\n{len(questions)} {args.split} questions of {args.questions}, retriever {args.retriever}, k {args.k}, "
        f"prompt version {args.prompt_version}"
    )
    print(
        "| format | n | Hit | Hit@1 | Macro-F1 | unparsed % | not-in-evidence answers % | read as | prompt tokens | s/question |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            "| {format} | {n} | {hit:.1f} | {hit1:.1f} | {f1:.1f} | {unparsed:.1f} | {ungrounded:.1f} | {modes} | {tokens:.0f} | {sec:.1f} |".format(
                **r
            )
        )


class _Recorder:
    """The pipeline's reasoner, keeping its last result (modes, budget) for the record."""

    def __init__(self, inner):
        self.inner, self.last = inner, None
        self.name, self.uses_llm = inner.name, inner.uses_llm

    def settings(self) -> dict:
        return self.inner.settings() if hasattr(self.inner, "settings") else {"reasoner": self.name}

    def reason(self, prompt, evidence=None, names=None):
        self.last = self.inner.reason(prompt, evidence, names)
        return self.last


def _summary(fmt: str, recs: list[dict]) -> dict:
    n = max(1, len(recs))
    answers = sum(len(r.get("answers") or []) for r in recs)
    ungrounded = sum(1 for r in recs for g in (r.get("grounded") or []) if not g)
    modes = Counter(m for r in recs for m in (r.get("modes") or {}).values())
    tokens = [r["usage"]["prompt_tokens"] for r in recs if r.get("usage")]
    return {
        "format": fmt,
        "n": len(recs),
        "hit": 100 * sum(bool(r["scores"]["hit"]) for r in recs) / n,
        "hit1": 100 * sum(bool(r["scores"]["hit1"]) for r in recs) / n,
        "f1": 100 * sum(r["scores"]["f1"] for r in recs) / n,
        "unparsed": 100 * sum(1 for r in recs if r.get("malformed")) / n,
        "ungrounded": 100 * ungrounded / max(1, answers),
        "modes": ", ".join(f"{k} {v}" for k, v in sorted(modes.items())) or "-",
        "tokens": statistics.mean(tokens) if tokens else 0.0,
        "sec": statistics.mean(r["seconds"] for r in recs) if recs else 0.0,
    }


if __name__ == "__main__":
    main()
