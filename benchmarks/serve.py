"""`kgdb serve` under load: questions per second and latency with 1, 8 and 32 concurrent HTTP clients,
against the same questions asked through separate `kgdb ask` processes and through the Python API
in this process (1 and 8 threads), all in one run, with the load average beside each row.

    KGDB_NEO4J_URI=$WEBQSP_URI .venv/bin/python benchmarks/serve.py \\
        --questions $KGDB_DATA/webqsp/questions.jsonl --split val --n 200

No LLM, nothing written back: the service runs `--read-only` and the API asks with `write=False`, so
every path answers the same way (the answering policy's plan: RRP without an LLM). The service is a
`kgdb serve` subprocess on a free loopback port, warmed up before it is timed; it is stopped before
the `kgdb ask` processes and the in-process rows run, so no two of them share the CPUs. Questions are
linked from their text, as a user's are. Each HTTP row asks `--n` questions (repeated to give every
client at least `--per-client`); a request that is not 200 is an error.

Where the time goes: the mean of each stage the answer reports (`timings_ms`: link, plan, ground, ...)
at each concurrency, and the service overhead, the client's latency minus the server's stage total:
HTTP, JSON, the evidence graph of the answer, and the wait for a free worker when the clients
outnumber them. Results go to `--out` as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def row(mode: str, clients: int, walls_ms: list[float], errors: int, seconds: float, load: list[float]) -> dict:
    done = len(walls_ms)
    return {
        "mode": mode,
        "clients": clients,
        "questions": done + errors,
        "errors": errors,
        "questions_per_s": round(done / seconds, 3) if seconds > 0 else None,
        "p50_ms": round(pct(walls_ms, 0.5), 1),
        "p95_ms": round(pct(walls_ms, 0.95), 1),
        "load_1min": load[0],
        "load": load,
    }


def start_service(args: argparse.Namespace, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "kgdb", "serve", "--read-only", "--port", str(port), "--deadline", str(args.deadline)]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    log = open(Path(tempfile.gettempdir()) / f"kgdb-serve-bench-{port}.log", "w")  # noqa: SIM115 (lives with the process)
    print(f"starting {' '.join(cmd[2:])} (log {log.name}) ...", flush=True)
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "200"})


def wait_ready(base: str, proc: subprocess.Popen, timeout: float) -> float:
    import httpx

    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc.poll() is not None:
            sys.exit(f"kgdb serve exited ({proc.returncode}) before it was ready; see its log")
        try:
            if httpx.get(f"{base}/v1/ready", timeout=5).status_code == 200:
                return time.perf_counter() - start
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.terminate()
    sys.exit(f"kgdb serve was not ready within {timeout:.0f} s")


def http_level(base: str, texts: list[str], clients: int, per_client: int) -> tuple[dict, list[dict]]:
    """`clients` threads, each with its own connection, asking from one shared queue of questions."""
    import httpx

    work = list(texts)
    while len(work) < clients * per_client:
        work += texts
    lock = threading.Lock()
    walls: list[float] = []
    answers: list[dict] = []
    errors = [0]

    def client() -> None:
        with httpx.Client(base_url=base, timeout=600) as http:
            while True:
                with lock:
                    if not work:
                        return
                    text = work.pop()
                t = time.perf_counter()
                try:
                    r = http.post("/v1/ask", json={"question": text})
                    ok = r.status_code == 200
                except httpx.HTTPError:
                    ok = False
                wall = (time.perf_counter() - t) * 1000
                with lock:
                    if ok:
                        walls.append(wall)
                        answers.append({"wall_ms": wall, "timings_ms": r.json().get("timings_ms", {})})
                    else:
                        errors[0] += 1

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for f in [pool.submit(client) for _ in range(clients)]:
            f.result()
    seconds = time.perf_counter() - start
    return row("http", clients, walls, errors[0], seconds, loadavg()), answers


def cli_processes(texts: list[str]) -> dict:
    """Each question in its own `kgdb ask` process (imports, models, connection: everything cold)."""
    walls, errors = [], 0
    start = time.perf_counter()
    for text in texts:
        t = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "kgdb", "ask", text, "--no-write", "--json"], capture_output=True, check=False
        )
        if done.returncode == 0:
            walls.append((time.perf_counter() - t) * 1000)
        else:
            errors += 1
    return row("kgdb ask processes", 1, walls, errors, time.perf_counter() - start, loadavg())


def in_process(kg, texts: list[str], threads: int) -> dict:
    from kgdb.errors import KgdbError

    walls: list[float] = []
    errors = [0]

    def one(text: str) -> None:
        t = time.perf_counter()
        try:
            kg.ask(text, write=False)
            walls.append((time.perf_counter() - t) * 1000)
        except KgdbError:
            errors[0] += 1

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, texts))
    return row("python api", threads, walls, errors[0], time.perf_counter() - start, loadavg())


def stages(answers: list[dict]) -> dict:
    """Mean ms of each stage the answers report, their total, and the HTTP overhead beside it."""
    names = list(dict.fromkeys(s for a in answers for s in a["timings_ms"]))
    out = {s: round(statistics.fmean(a["timings_ms"].get(s, 0.0) for a in answers), 1) for s in names}
    totals = [sum(a["timings_ms"].values()) for a in answers]
    out["server total"] = round(statistics.fmean(totals), 1)
    out["service overhead"] = round(statistics.fmean(a["wall_ms"] - t for a, t in zip(answers, totals)), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=Path, required=True, help="WebQSP-style questions.jsonl (or MetaQA qa.txt)")
    ap.add_argument("--split", default="val", help="train | val | test | all (the fixed splits); default val")
    ap.add_argument("--n", type=int, default=200, help="questions asked per row (the first N of the split)")
    ap.add_argument("--warmup", type=int, default=3, help="questions asked before any timing")
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32], help="concurrent HTTP clients per row")
    ap.add_argument("--per-client", type=int, default=4, help="at least this many questions per HTTP client")
    ap.add_argument("--processes", type=int, default=5, help="questions asked through separate `kgdb ask` processes")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 8], help="in-process API threads per row")
    ap.add_argument("--workers", type=int, default=None, help="kgdb serve --workers (default: its own, the cores)")
    ap.add_argument("--deadline", type=float, default=600.0, help="kgdb serve --deadline (s)")
    ap.add_argument("--start-timeout", type=float, default=600.0, help="seconds to wait for kgdb serve to be ready")
    ap.add_argument("--out", type=Path, default=Path("bench-serve.json"), help="results JSON")
    args = ap.parse_args()

    import httpx

    from kgdb.config import load_settings
    from kgdb.data.questions import read_questions
    from kgdb.server_home import free_port

    settings = load_settings()
    qs = read_questions(args.questions)
    split = args.split if qs.split(args.split) else "all"
    records = qs.split(split)[: args.warmup + args.n]
    if len(records) <= args.warmup:
        sys.exit(f"{args.questions}: only {len(records)} questions in split {split!r}; need more than --warmup")
    warm, texts = [q.text for q in records[: args.warmup]], [q.text for q in records[args.warmup :]]
    print(
        f"graph {settings.neo4j_uri}; {len(texts)} questions of {qs.dataset} {split} (+{len(warm)} warm-up); "
        f"{os.cpu_count()} CPUs; load average at start {loadavg()}",
        flush=True,
    )
    rows: list[dict] = []
    breakdown: dict[str, dict] = {}

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_service(args, port)
    try:
        ready_s = wait_ready(base, proc, args.start_timeout)
        print(f"kgdb serve ready in {ready_s:.1f} s (warm-up included)", flush=True)
        for text in warm:
            httpx.post(f"{base}/v1/ask", json={"question": text}, timeout=600)
        for clients in args.clients:
            print(f"http: {clients} concurrent clients ...", flush=True)
            result, answers = http_level(base, texts, clients, args.per_client)
            rows.append(result)
            if answers:
                breakdown[f"http, {clients} clients"] = stages(answers)
    finally:
        proc.terminate()
        proc.wait(timeout=60)

    print(f"kgdb ask: {args.processes} separate processes ...", flush=True)
    rows.append(cli_processes(texts[: args.processes]))

    import kgdb

    with kgdb.connect() as kg:
        for text in warm:
            with contextlib.suppress(kgdb.KgdbError):
                kg.ask(text, write=False)
        for threads in args.threads:
            print(f"python api: {threads} threads ...", flush=True)
            rows.append(in_process(kg, texts, threads))

    print()
    print(f"{'mode':<20} {'clients':>7} {'asked':>6} {'errors':>6} {'q/s':>8} {'p50 ms':>9} {'p95 ms':>9}  load 1/5/15")
    for r in rows:
        print(
            f"{r['mode']:<20} {r['clients']:>7} {r['questions']:>6} {r['errors']:>6} {r['questions_per_s'] or 0:8.2f} "
            f"{r['p50_ms']:9.1f} {r['p95_ms']:9.1f}  {' '.join(f'{x:.2f}' for x in r['load'])}"
        )
    if breakdown:
        names = list(dict.fromkeys(s for b in breakdown.values() for s in b))
        print(
            "\nwhere the time goes (mean ms per answered question; service overhead = client latency - server stage total)"
        )
        print(f"{'stage':<16}" + "".join(f" {k:>18}" for k in breakdown))
        for s in names:
            print(f"{s:<16}" + "".join(f" {b.get(s, 0.0):18.1f}" for b in breakdown.values()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "graph": settings.neo4j_uri,
                "questions": str(args.questions),
                "split": split,
                "n": len(texts),
                "cpus": os.cpu_count(),
                "rows": rows,
                "stages_ms": breakdown,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nresults {args.out}")


if __name__ == "__main__":
    main()
