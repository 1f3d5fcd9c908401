"""`kgdb label` end to end over real HTTP: the local OpenAI-protocol test server (tests/support/openai_server.py,
label paths selected by its fixed rule) answers the selection prompts of N training questions, the
labels are stored in the graph, and a second run of the same command has nothing to do.

    KGDB_NEO4J_URI=$WEBQSP_URI KGDB_NEO4J_PASSWORD=... .venv/bin/python benchmarks/label_demo.py \
        --questions $KGDB_DATA/webqsp/questions.jsonl --method rapl --limit 50

Both runs are real `kgdb label` processes; their output is printed as is, then what the graph holds
(the query an analyst would paste, kgdb/cypher/browser/question_labels.cypher, run on one question;
for --method rapl-relations, browser/question_relation_targets.cypher).
With --fresh, this model's earlier labellings of the method are deleted first (demo graphs only).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.openai_server import OpenAIServer, scripted_llm  # noqa: E402

MODEL = "kgdb-scripted-selector"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--method", default="rapl", choices=["rapl", "reg", "rapl-relations"])
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--fresh", action="store_true", help="delete this model's labellings of --method first")
    args = parser.parse_args()

    from kgdb.config import load_settings
    from kgdb.cypher import Graph

    graph = Graph.connect(load_settings())
    if args.fresh:
        gone = graph.run_text(
            "MATCH (l:Labelling {method: $method, model: $model}) OPTIONAL MATCH (l)-[:SELECTED]->(p:LabelPath) "
            "DETACH DELETE l, p RETURN count(DISTINCT l) AS n",
            method=args.method,
            model=MODEL,
        )
        print(f"--fresh: deleted {gone[0]['n']} earlier labellings", flush=True)
    with OpenAIServer(responder=scripted_llm, model=MODEL) as server:
        env = {**os.environ, "KGDB_LLM_BASE_URL": server.base_url, "KGDB_LLM_MODEL": MODEL, "KGDB_LLM_API_KEY": "test"}
        cmd = [
            sys.executable,
            "-m",
            "kgdb",
            "label",
            "--questions",
            str(args.questions),
            "--method",
            args.method,
            "--split",
            "train",
            "--limit",
            str(args.limit),
            "--concurrency",
            str(args.concurrency),
        ]
        print("$ KGDB_LLM_BASE_URL=" + server.base_url, f"KGDB_LLM_MODEL={MODEL}", "kgdb", *cmd[3:], flush=True)
        for run in (1, 2):
            t0 = time.perf_counter()
            out = subprocess.run(cmd, env=env, capture_output=True, text=True)
            lines = [ln for ln in out.stdout.splitlines() if not ln.startswith("label ")]  # progress lines
            print(
                f"--- run {run} (exit {out.returncode}, {time.perf_counter() - t0:.1f} s, "
                f"{server.calls} HTTP requests served so far) ---",
                flush=True,
            )
            print("\n".join(lines), out.stderr.strip(), sep="\n", flush=True)
    row = graph.run_text(
        "MATCH (l:Labelling {method: $method, model: $model}) "
        "OPTIONAL MATCH (l)-[:SELECTED]->(p:LabelPath) "
        "RETURN count(DISTINCT l) AS labellings, count(p) AS paths, collect(DISTINCT l.status) AS statuses",
        method=args.method,
        model=MODEL,
    )[0]
    print(
        f"in the graph: {row['labellings']} Labelling nodes ({', '.join(sorted(row['statuses']))}), {row['paths']} LabelPath nodes"
    )
    one = graph.run_text(
        "MATCH (l:Labelling {method: $method, model: $model, status: 'ok'}) RETURN l.qid AS qid ORDER BY l.qid LIMIT 1",
        method=args.method,
        model=MODEL,
    )
    if one and args.method == "rapl-relations":
        qid = one[0]["qid"]
        lab = graph.run_text(
            "MATCH (l:Labelling {qid: $qid, method: $method, model: $model}) RETURN l.relations AS r, l.directions AS d",
            qid=qid,
            method=args.method,
            model=MODEL,
        )[0]
        rows = graph.run("browser/question_relation_targets", qid=qid, method=args.method)
        print(
            f"browser/question_relation_targets.cypher with :param qid => '{qid}', method => '{args.method}': "
            f"{len(rows)} topic triples drawn for R_* = "
            + ", ".join(("→ " if d > 0 else "← ") + r for r, d in zip(lab["r"], lab["d"]))
        )
    elif one:
        qid = one[0]["qid"]
        rows = graph.run("browser/question_labels", qid=qid, method=args.method)
        paths = list(dict.fromkeys((r["p"]["rank"], r["p"]["text"]) for r in rows))
        print(
            f"browser/question_labels.cypher with :param qid => '{qid}', method => '{args.method}': "
            f"{len(rows)} rows (triples) on {len(paths)} label paths, e.g."
        )
        for rank, text in paths[:3]:
            print(f"  rank {rank}: {text}")
    graph.close()


if __name__ == "__main__":
    main()
