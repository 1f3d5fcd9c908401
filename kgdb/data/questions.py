"""Question sets (WebQSP `questions.jsonl`, MetaQA `qa.txt`) and their fixed train/val/test splits.

Split rule (stable and documented): a question goes to `train` when the first 8 bytes of
sha256("<dataset>:<question id>") read as an integer fall in the first 60 % of the range, to
`val` for the next 20 % and to `test` for the last 20 %. It depends only on the dataset key and
the id, so adding or removing other questions never moves a question between splits.

Ids: WebQSP questions carry their own (`WebQTest-…`). MetaQA lines have none, so the id is
`<k>hop-<line number>` (1-based) of the visible `k-hop/qa.txt`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from kgdb.data.lines import bounded_lines
from kgdb.errors import InputError
from kgdb.limits import MAX_LINE_BYTES, MAX_RECORD_BYTES

log = logging.getLogger("kgdb.questions")

SPLITS = ("train", "val", "test")
SPLIT_FRACTIONS = (0.6, 0.2, 0.2)
_METAQA_TOPIC = re.compile(r"\[([^\]]+)\]")
_HOP_DIR = re.compile(r"^(\d)-hop$")


@dataclass(frozen=True)
class QuestionRecord:
    """One question with its gold topic entities and answers (entity ids as stored in the graph)."""

    id: str
    text: str
    topics: list[str]
    answers: list[str]
    hop: int | None = None  # known for MetaQA; computed from the subgraph otherwise
    extra: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class QuestionSet:
    dataset: str  # split key: "webqsp", "metaqa-1hop", ...
    path: Path
    questions: list[QuestionRecord]
    split_file: Path | None = None  # another dataset's fixed split that holds most of the ids (`split_key`)

    def split(self, name: str | None) -> list[QuestionRecord]:
        if name in (None, "all"):
            return list(self.questions)
        if name not in SPLITS:
            raise InputError(f"unknown split {name!r}; use one of {', '.join(SPLITS)} or all", path=self.path)
        return [q for q in self.questions if split_of(self.dataset, q.id) == name]

    @property
    def split_note(self) -> str | None:
        """Says so where the file takes another dataset's fixed splits (`split_key`)."""
        if self.split_file is None:
            return None
        return f"most ids of {self.path.name} are {self.dataset}'s: its fixed splits ({self.split_file}) apply"


SAMPLE_SEED = 0


def subsample(
    records: list[QuestionRecord], *, limit: int | None = None, sample: int | None = None
) -> list[QuestionRecord]:
    """The first `limit` records, or `sample` of them drawn at random (seed `SAMPLE_SEED`) and kept in
    file order. MetaQA's files are grouped by question template, so a prefix covers a few templates
    only; a random sample covers them all. Both at once is refused."""
    if limit is not None and sample is not None:
        raise InputError("give --limit (the first N questions) or --sample (N at random), not both", path="--sample")
    for value, name in ((limit, "--limit"), (sample, "--sample")):
        if value is not None and value < 1:
            raise InputError(f"must be positive, got {value}", path=name)
    if limit is not None:
        return records[:limit]
    if sample is None or sample >= len(records):
        return list(records)
    keep = sorted(random.Random(SAMPLE_SEED).sample(range(len(records)), sample))
    return [records[i] for i in keep]


def split_of(dataset: str, qid: str) -> str:
    """The fixed split ("train" / "val" / "test") of question `qid` in `dataset`."""
    digest = hashlib.sha256(f"{dataset}:{qid}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    if u < SPLIT_FRACTIONS[0]:
        return "train"
    if u < SPLIT_FRACTIONS[0] + SPLIT_FRACTIONS[1]:
        return "val"
    return "test"


def read_questions(path: Path | str, splits_dir: Path = Path("splits")) -> QuestionSet:
    """Read a WebQSP-style `.jsonl` or a MetaQA `qa.txt` (format chosen by the file name). A `.jsonl` file
    most of whose ids one of the fixed splits in `splits_dir` holds takes that dataset's key
    (`split_key`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("question file not found", path=path)
    if path.suffix == ".jsonl":
        records = _read_webqsp(path)
        key, fixed = split_key(jsonl_dataset_key(path), [r.id for r in records], Path(splits_dir))
        qs = QuestionSet(key, path, records, fixed)
        if qs.split_note:  # every command that reads the file says so, and so does the Python API
            log.warning("note: %s", qs.split_note)
        return qs
    if path.suffix == ".txt":
        hop = _metaqa_hop(path)
        key = f"metaqa-{hop}hop" if hop else "metaqa"
        return QuestionSet(key, path, _read_metaqa(path, hop))
    raise InputError("unknown question format: expected WebQSP .jsonl or MetaQA qa.txt", path=path)


def jsonl_dataset_key(path: Path) -> str:
    """The dataset key of a `.jsonl` question file (it keys the split hash and result names).

    `.../webqsp/questions.jsonl` -> `webqsp` (a file named `questions.jsonl` takes its folder's
    name), any other file its own stem: two question sets never share a key by accident.
    """
    stem = path.parent.name if path.stem == "questions" and path.parent.name else path.stem
    return re.sub(r"[^a-z0-9_.-]+", "-", stem.lower()).strip("-") or "questions"


def split_key(own: str, ids: list[str], splits_dir: Path) -> tuple[str, Path | None]:
    """`own`, the file's key, where `splits_dir` has a fixed split for it; else the key and file of the fixed
    split there that holds more than half of `ids`, so that a part or a renamed copy of a dataset's questions
    keeps the dataset's splits (hashed with its own key, a copy would put the dataset's test questions in its
    train and val splits); else `own`."""
    if not ids or (splits_dir / f"{own}.json").is_file() or not splits_dir.is_dir():
        return own, None
    wanted = set(ids)
    for path in sorted(splits_dir.glob("*.json")):
        try:
            fixed = json.loads(path.read_text(encoding="utf-8"))
            held = {qid for name in SPLITS for qid in fixed.get("ids", {}).get(name, [])} & wanted
        except (OSError, ValueError, AttributeError, TypeError):
            continue  # not a split file kgdb wrote: it fixes nothing
        if 2 * len(held) > len(wanted):
            return str(fixed.get("dataset") or path.stem), path
    return own, None


def file_tag(path: Path) -> str:
    """Eight hex digits of the file's sha256: result names say which file they came from."""
    with Path(path).open("rb") as fh:  # in blocks: a question file is never held whole for its tag
        return hashlib.file_digest(fh, "sha256").hexdigest()[:8]


def default_split(dataset: str, splits_dir: Path = Path("splits")) -> str:
    """`test` when the dataset has a fixed split file in `splits/`, else `all` (a new question file
    is evaluated whole, not on a hash subset nobody chose)."""
    return "test" if (Path(splits_dir) / f"{dataset}.json").is_file() else "all"


def _read_webqsp(path: Path) -> list[QuestionRecord]:
    from kgdb.data.question_rows import QuestionRowError, parse_line

    out = []
    for line_no, text in _lines(path, MAX_RECORD_BYTES):
        try:
            row = parse_line(text)
        except QuestionRowError as exc:
            raise InputError(str(exc), path=path, line=line_no) from None
        # `answer` is the list RoG/SubgraphRAG score against; `a_entity` adds the original WebQSP names.
        answers = list(dict.fromkeys(row.answer + row.a_entity))
        out.append(QuestionRecord(row.id, row.question, row.q_entity, answers))
    return out


def _lines(path: Path, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of each non-blank line, decoded as UTF-8 line by line so a bad
    byte is reported where it is; a byte-order mark at the start is dropped. A line over `limit` bytes
    is refused as it is read."""
    with path.open("rb") as fh:
        for line_no, raw in bounded_lines(fh, path, limit):
            try:
                text = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                raise InputError(f"invalid UTF-8 at byte {exc.start}", path=path, line=line_no) from None
            if line_no == 1:
                text = text.removeprefix("\ufeff")
            if text.strip():
                yield line_no, text


def _metaqa_hop(path: Path) -> int | None:
    m = _HOP_DIR.match(path.parent.name)
    return int(m.group(1)) if m else None


def _read_metaqa(path: Path, hop: int | None) -> list[QuestionRecord]:
    out = []
    prefix = f"{hop}hop" if hop else "metaqa"
    for line_no, line in _lines(path):
        parts = line.split("\t")
        topic = _METAQA_TOPIC.search(parts[0])
        if len(parts) != 2 or topic is None:
            raise InputError("expected `question with [topic]<TAB>answer1|answer2`", path=path, line=line_no)
        text = _METAQA_TOPIC.sub(lambda m: m.group(1), parts[0])
        answers = [a for a in parts[1].split("|") if a]
        out.append(QuestionRecord(f"{prefix}-{line_no}", text, [topic.group(1)], answers, hop))
    return out


def split_summary(qs: QuestionSet) -> dict:
    """Counts and id lists of each split, as written to `splits/<dataset>.json`."""
    ids = {name: [q.id for q in qs.split(name)] for name in SPLITS}
    return {
        "dataset": qs.dataset,
        "source": qs.path.name if qs.dataset == "webqsp" else f"{qs.path.parent.name}/{qs.path.name}",
        "rule": "sha256('<dataset>:<id>')[:8] as uint64 / 2^64: <0.6 train, <0.8 val, else test",
        "counts": {name: len(v) for name, v in ids.items()},
        "ids": ids,
    }
