"""Versioned prompt templates for the reasoner LLM and the evidence renderings they take.

Templates live in `kgdb/models/prompts/<format>_v<n>.txt`, one section per chat message
(`=== system ===`, `=== example_user ===`, `=== example_assistant ===`, `=== user ===`), with
`$evidence` and `$question` filled in by `string.Template`. A changed wording gets a new version
file, so results JSON can say exactly which prompt produced them.

Formats (structure from the papers, wording our own):
- `triples`: SubgraphRAG's `(head,relation,tail)` lines, best retriever score first;
- `chains`: ReG's `Chain n. a → [r] → b; c` evidence chains;
- `paths`: RAPL/RRP's `a → r → b` reasoning paths ordered by importance;
- `candidates` (not an evidence format of its own): the no-LLM answerer's top candidates with the
  paths that reach them, for an LLM that only chooses (kgdb/qa/reasoners/candidates.py).
Version 2 of the evidence formats has no worked example: small models copied its answers, and a
reply constrained by a JSON schema needs none. The example sections are optional for that reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from string import Template

from kgdb.errors import InputError

TEMPLATE_DIR = Path(__file__).parent / "prompts"
FORMATS = ("triples", "chains", "paths")
# Label-selection prompts of `kgdb label` (kgdb/qa/labelling.py), same file layout.
LABEL_FORMATS = ("label_rapl", "label_reg", "label_rapl_relations")
# The LLM relation-path planner's prompt (`--planner llm`, kgdb/qa/llm_planner.py), same file layout.
PLAN_FORMATS = ("plan_paths",)
# The LLM chooses among the no-LLM answerer's candidates (kgdb/qa/reasoners/candidates.py).
CANDIDATE_FORMATS = ("candidates",)
DEFAULT_VERSION = 1
REQUIRED_SECTIONS = ("system", "user")
_SECTION = re.compile(r"^=== (\w+) ===$", re.MULTILINE)

# SubgraphRAG's follow-up turn (reference code, "sys_icl_dc" mode), in our words: asked once when
# the first reply has no usable `ans:` line.
FOLLOW_UP = (
    "Think step by step once more. List the most likely answers the evidence supports, each on its own "
    'line starting with "ans:". If the evidence is not sufficient, write "ans: not available".'
)


@dataclass(frozen=True)
class PromptTemplate:
    format: str
    version: int
    sections: dict[str, str]

    @property
    def name(self) -> str:
        return f"{self.format}_v{self.version}"

    @property
    def example_question(self) -> str:
        return self.sections.get("example_user", "").rsplit("Question:", 1)[-1].strip()


@dataclass(frozen=True)
class Prompt:
    """Chat messages ready for an OpenAI-compatible endpoint, plus what produced them."""

    template: str  # e.g. "triples_v1"
    messages: list[dict[str, str]]
    evidence_lines: int
    # what built it, so a reasoner can rebuild it with fewer lines or without the worked example
    question: str = ""
    lines: tuple[str, ...] = ()  # rendered evidence lines, best first, before numbering

    def text(self) -> str:
        """Human-readable rendering for `kgdb ask --show-prompt`."""
        return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in self.messages)

    @property
    def has_example(self) -> bool:
        return any(m["role"] == "assistant" for m in self.messages)

    def rebuilt(self, lines: int | None = None, example: bool | None = None) -> Prompt:
        """The same prompt with only the first `lines` evidence lines and/or without the worked example."""
        fmt, version = self.template.rsplit("_v", 1)
        keep = self.lines if lines is None else self.lines[:lines]
        return build_prompt(
            fmt, self.question, keep, int(version), example=self.has_example if example is None else example
        )


@cache
def load_template(fmt: str, version: int = DEFAULT_VERSION) -> PromptTemplate:
    if fmt not in FORMATS + LABEL_FORMATS + PLAN_FORMATS + CANDIDATE_FORMATS:
        raise InputError(f"unknown prompt format {fmt!r}; choose one of {', '.join(FORMATS)}", path="--format")
    path = TEMPLATE_DIR / f"{fmt}_v{version}.txt"
    if not path.is_file():
        raise InputError(f"no prompt template {path.name} in {TEMPLATE_DIR}", path="--prompt-version")
    text = path.read_text(encoding="utf-8")
    parts = _SECTION.split(text)
    # parts = [comments, name1, body1, name2, body2, ...]
    sections = {name: body.strip("\n") for name, body in zip(parts[1::2], parts[2::2])}
    missing = [s for s in REQUIRED_SECTIONS if s not in sections]
    if ("example_user" in sections) != ("example_assistant" in sections):
        missing.append("example_user" if "example_user" not in sections else "example_assistant")
    if missing:
        raise InputError(f"template lacks section(s) {', '.join(missing)}", path=path)
    return PromptTemplate(fmt, version, sections)


def render_triple(head: str, relation: str, tail: str) -> str:
    """SubgraphRAG's triple line: no spaces around the commas."""
    return f"({head},{relation},{tail})"


def render_path(nodes: Sequence[str], relations: Sequence[str]) -> str:
    """RAPL/RRP path line `a → r1 → b → r2 → c` (len(nodes) == len(relations) + 1)."""
    out = [nodes[0]]
    for rel, node in zip(relations, nodes[1:]):
        out += [rel, node]
    return " → ".join(out)


_REVERSED_STEP = re.compile(r"→ \[([^\]]+)\] \(reversed\) →")
_STEP = re.compile(r"→ \[([^\]]+)\] →")


def path_line(chain_line: str) -> str:
    """A chain or path line (`a → [r] → b`, `a → [r] (reversed) → b`) without the brackets: RAPL/RRP
    path style, a relation followed against its direction written `a ← r ← b` (b has relation r to a)."""
    return _STEP.sub(r"→ \1 →", _REVERSED_STEP.sub(r"← \1 ←", chain_line))


def step_line(anchor: str, steps: Sequence[tuple[str, int]], end: str) -> str:
    """`anchor → r1 → … → r2 → end` for relation steps (relation, +1 along / -1 against the edge)
    whose middle entities are not named."""
    parts = [anchor]
    for i, (rel, direction) in enumerate(steps):
        arrow = "→" if direction > 0 else "←"
        parts.append(f"{arrow} {rel} {arrow}")
        parts.append(end if i == len(steps) - 1 else "…")
    return " ".join(parts)


def number_chains(lines: Sequence[str]) -> list[str]:
    return [f"Chain {i}. {line}" for i, line in enumerate(lines, 1)]


def normalise_question(question: str) -> str:
    """Trim and end with a question mark, as the SubgraphRAG reference code does."""
    q = " ".join(question.split())
    return q if q.endswith("?") else q + "?"


def build_prompt(
    fmt: str, question: str, evidence_lines: Sequence[str], version: int = DEFAULT_VERSION, example: bool = True
) -> Prompt:
    """Messages: system, the worked example (user + assistant) where the template has one and
    `example` is set, then the real question.

    `evidence_lines` are already rendered in the format's style and ordered best first; for
    `chains` they are numbered here.
    """
    template = load_template(fmt, version)
    lines = number_chains(evidence_lines) if fmt == "chains" else list(evidence_lines)
    evidence = "\n".join(lines) if lines else "(none retrieved)"
    user = Template(template.sections["user"]).safe_substitute(evidence=evidence, question=normalise_question(question))
    messages = [{"role": "system", "content": template.sections["system"]}]
    if example and "example_user" in template.sections:
        messages += [
            {"role": "user", "content": template.sections["example_user"]},
            {"role": "assistant", "content": template.sections["example_assistant"]},
        ]
    messages.append({"role": "user", "content": user})
    return Prompt(
        template=template.name,
        messages=messages,
        evidence_lines=len(lines),
        question=question,
        lines=tuple(evidence_lines),
    )


def follow_up(prompt: Prompt, first_reply: str) -> list[dict[str, str]]:
    """Messages for the single follow-up turn after a reply without usable `ans:` lines."""
    return [*prompt.messages, {"role": "assistant", "content": first_reply}, {"role": "user", "content": FOLLOW_UP}]
