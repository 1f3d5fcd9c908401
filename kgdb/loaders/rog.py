"""RoG-style KGQA datasets (`rmanluo/RoG-webqsp`, `rmanluo/RoG-cwq`): parquet or JSONL rows with
columns `id, question, answer, q_entity, a_entity, graph`, where `graph` is a list of
`[head, relation, tail]`. The loader takes the union of all question graphs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from kgdb.data.lines import bounded_lines
from kgdb.errors import InputError, KgdbError
from kgdb.ids import normalise_mid, normalise_relation
from kgdb.limits import MAX_RECORD_BYTES
from kgdb.loaders.badlines import BadLines, decode_line
from kgdb.loaders.source import Record, SourceStream, TripleSource, collect

ROG_SUFFIXES = (".parquet", ".jsonl", ".json")
HUB_DATASETS = {"webqsp": "rmanluo/RoG-webqsp", "cwq": "rmanluo/RoG-cwq"}


def rog_rows(path: Path, bad: BadLines) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line or row number, record) of a RoG parquet or JSONL file."""
    if not path.is_file():
        raise InputError("file not found", path=path)
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:  # row groups streamed in batches: a large file is never held whole
            batches = pq.ParquetFile(path).iter_batches(batch_size=1024)
            row_no = 0
            for batch in batches:
                for record in batch.to_pylist():
                    row_no += 1
                    yield row_no, record
        except (InputError, KgdbError):
            raise
        except Exception as exc:  # pyarrow raises several types for corrupt or non-parquet files
            raise InputError(f"not a readable parquet file ({exc})", path=path) from exc
        return
    with path.open("rb") as fh:
        for line_no, raw in bounded_lines(fh, path, MAX_RECORD_BYTES, bad):
            text = decode_line(raw, path, line_no, bad)
            if text is None or not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                bad(f"invalid JSON ({exc.msg})", path, line_no)
                continue
            except (ValueError, RecursionError) as exc:  # integers too long to convert, nesting too deep
                bad(f"unreadable JSON ({type(exc).__name__})", path, line_no)
                continue
            if not isinstance(record, dict):
                bad("expected a JSON object per line", path, line_no)
                continue
            yield line_no, record


def stream_rog(paths: list[Path], bad: BadLines | None = None) -> SourceStream:
    stream = SourceStream(description=", ".join(str(p) for p in paths), bad=bad or BadLines())

    def records() -> Iterator[Record]:
        bad = stream.bad
        for path in paths:
            for line_no, record in rog_rows(path, bad):
                stream.lines += 1
                graph = record.get("graph")
                if graph is None:
                    bad(
                        "record has no `graph` column (expected RoG columns id, question, answer, q_entity, a_entity, graph)",
                        path,
                        line_no,
                    )
                    continue
                if not isinstance(graph, (list, tuple)):
                    bad("`graph` must be a list of [head, relation, tail]", path, line_no)
                    continue
                for triple in graph:
                    fields = (
                        [str(x) if x is not None else "" for x in triple] if isinstance(triple, (list, tuple)) else []
                    )
                    if len(fields) != 3 or not all(f.strip() for f in fields):
                        bad(
                            f"graph entry {triple!r} is not a [head, relation, tail] of non-empty strings",
                            path,
                            line_no,
                        )
                        continue
                    h, r, t = (bad.clean(f) for f in fields)
                    h, r, t = normalise_mid(h), normalise_relation(r), normalise_mid(t)
                    if bad.triple_ok(h, r, t, path, line_no):
                        yield h, r, t, False

    stream.records = records
    return stream


def read_rog(paths: list[Path], bad: BadLines | None = None) -> TripleSource:
    return collect(stream_rog(paths, bad))


def rog_files(folder: Path) -> list[Path]:
    """The parquet/JSONL files of a dataset folder (e.g. a hub snapshot), in name order."""
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in ROG_SUFFIXES and p.is_file())
    if not files:
        raise InputError("no .parquet or .jsonl files in this folder", path=folder)
    return files


def fetch_rog(dataset: str, cache_dir: Path) -> list[Path]:
    """Download a RoG dataset from the Hugging Face hub (where the network allows)."""
    repo = HUB_DATASETS.get(dataset)
    if repo is None:
        raise InputError(f"unknown dataset {dataset!r}; use one of {', '.join(HUB_DATASETS)}", path="--dataset")
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise KgdbError("--dataset needs `pip install huggingface_hub`") from exc
    try:
        folder = snapshot_download(
            repo_id=repo,
            repo_type="dataset",
            allow_patterns=["*.parquet"],
            cache_dir=str(cache_dir / "hub"),
            etag_timeout=10,
        )
    except Exception as exc:  # offline, DNS, proxy and HTTP failures all land here
        raise KgdbError(
            f"cannot download {repo} from the Hugging Face hub ({type(exc).__name__}): no network here? "
            f"Download its parquet files where the network allows and pass them as SOURCE "
            f"(`kgdb load freebase-subset path/to/{dataset}/`)"
        ) from exc
    return rog_files(Path(folder))
