"""An LLM as RRP's relation-path planner (`--planner llm`), RoG-style: the configured OpenAI-compatible
endpoint is shown the question, its topic entities and the relations around them (read from the
graph), and asked for relation paths `rel1 -> rel2`, one per line, 1-3 hops
(`kgdb/qa/prompts/plan_paths_v<n>.txt`). No LLM can be fine-tuned here, so this is the paper's
plug-and-play setting; grounding, the structural reasoner and rethinking stay as they are.

Reply rules as in `kgdb label`: a reply with no usable path gets one follow-up turn; if that has
none either, the trained planner for the graph plans instead (when one exists, else nothing is
planned) and a note says so. Paths naming relations the graph does not have are dropped and
counted in a note. The order the LLM gave is the score (1, 1/2, 1/3, ...).
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from string import Template
from typing import TYPE_CHECKING, Callable, Iterator, Mapping

from kgdb.errors import KgdbError
from kgdb.qa.prompts import load_template, normalise_question
from kgdb.rrp.plan import PathPlanner, Plan, PlannedPath, names_of

if TYPE_CHECKING:  # no neo4j driver or torch at import time
    from kgdb.config import Settings
    from kgdb.cypher import Graph
    from kgdb.reading import QuestionReading, Topics

MAX_HOPS = 3
FOLLOW_UP = (
    "Your reply has no relation path. Answer again with only relation paths, one per line, each 1 to 3 relation "
    'names joined by " -> ", for example: first.relation -> second.relation'
)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|path\s*\d*\s*:)\s*", re.IGNORECASE)
_ARROW = re.compile(r"\s*(?:->|→)\s*")
_RELATION = re.compile(r"^[\w.:/#-]+$")


def parse_paths(reply: str, max_hops: int = MAX_HOPS) -> list[tuple[str, ...]]:
    """Relation paths in reply order, without repeats: lines `rel1 -> rel2` (or `→`), optionally
    bulleted or numbered; a line of one relation name (with a `.`, `_` or `/`) is a 1-hop path. A
    line with prose or more than `max_hops` relations is not a path."""
    out: list[tuple[str, ...]] = []
    for line in reply.splitlines():
        parts = _ARROW.split(_BULLET.sub("", line.strip()).strip("`").strip())
        # a lone word ("Sorry", "Paths:") is prose, not a 1-hop path: one relation alone must look like a name
        lone_word = len(parts) == 1 and not re.search(r"[._/]", parts[0])
        if 0 < len(parts) <= max_hops and all(_RELATION.match(p) for p in parts) and not lone_word:
            out.append(tuple(parts))
    return list(dict.fromkeys(out))


def require_planner_llm(settings: Settings) -> None:
    """`LLMNotConfigured` without an LLM, as for any registered planner that needs one."""
    from kgdb.qa.planners import require_planner_ready

    require_planner_ready(LLMPathPlanner.name, settings)


class LLMPathPlanner(PathPlanner):
    """`plan(graph, question, topics, names) -> Plan` through an LLM; the plan carries its notes (what
    was dropped or fell back) and the token usage."""

    name = "llm"

    def __init__(
        self,
        llm,
        *,
        fallback: PathPlanner | None = None,
        version: int = 1,
        max_hops: int = MAX_HOPS,
        max_relations: int = 200,
    ):
        self.llm, self.fallback, self.max_hops, self.max_relations = llm, fallback, max_hops, max_relations
        self.template = load_template("plan_paths", version)

    def describe(self) -> dict:
        return {
            "llm": self.llm.settings(),
            "prompt_template": self.template.name,
            "max_hops": self.max_hops,
            "fallback": _planner_name(self.fallback) if self.fallback is not None else None,
        }

    def question(self) -> AbstractContextManager[None]:
        """The fallback's block: the readings of a question the LLM hands over share what the fallback keeps."""
        return self.fallback.question() if self.fallback is not None else nullcontext()

    def messages(
        self, graph: Graph, reading: QuestionReading, topics: list[str], topic_names: list[str]
    ) -> list[dict[str, str]]:
        """The chat: system, the worked example, then the question with the relations around its topics."""
        from kgdb.cypher.paths import relations_around

        relations = sorted({r for r, _ in relations_around(graph, topics)})[: self.max_relations]
        t = self.template.sections
        user = Template(t["user"]).safe_substitute(
            entities=", ".join(topic_names) or "(none)",
            evidence="\n".join(relations) or "(none)",
            question=normalise_question(reading.text),  # an LLM reads the text, as an encoder does
        )
        return [
            {"role": "system", "content": t["system"]},
            {"role": "user", "content": t["example_user"]},
            {"role": "assistant", "content": t["example_assistant"]},
            {"role": "user", "content": user},
        ]

    def plan(self, graph: Graph, reading: QuestionReading, topics: Topics, names: Mapping[str, str]) -> Plan:
        from kgdb.qa.reasoners.base import Reasoning

        named = names_of(topics, names)
        usage = Reasoning(answers=[], reply="", reasoner=self.llm.name, llm_used=True)
        notes: list[str] = []
        messages = self.messages(graph, reading, topics.ids, list(named))
        deadline = self.llm.deadline()  # the plan and its follow-up turn share the deadline of one question
        # LLMError (the client's retries spent, or the deadline passed) reaches the caller
        reply = self.llm.complete(messages, usage, deadline=deadline)
        paths = self._usable(graph, reply, notes)
        if not paths:  # one follow-up turn, as `kgdb label` does
            second = self.llm.complete(
                [*messages, {"role": "assistant", "content": reply}, {"role": "user", "content": FOLLOW_UP}],
                usage,
                deadline=deadline,
            )
            paths = self._usable(graph, second, notes)
        counts = {
            "calls": usage.calls,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "template": self.template.name,
        }
        if not paths and self.fallback is not None:  # the trained planner's plan, as it plans alone
            notes.append(
                f"the LLM planner gave no usable relation path after one follow-up; the trained planner "
                f"({_planner_name(self.fallback)}) planned instead"
            )
            fell = self.fallback.plan(graph, reading, topics, names)
            return replace(fell, notes=(*notes, *fell.notes), usage=counts)
        if not paths:
            notes.append(
                "the LLM planner gave no usable relation path after one follow-up and no trained planner exists "
                "for this graph: "
                "nothing planned"
            )
        # the order the LLM gave is the score; the structural reasoner reads the question without the topic names
        planned = tuple(PlannedPath(p, 1.0 / rank) for rank, p in enumerate(paths, 1))
        return Plan(topics, named, planned, reading.plain(named), notes=tuple(notes), usage=counts)

    def _usable(self, graph: Graph, reply: str, notes: list[str]) -> list[tuple[str, ...]]:
        from kgdb.cypher.paths import unknown_relations

        paths = parse_paths(reply, self.max_hops)
        unknown = set(unknown_relations(graph, [r for p in paths for r in p]))
        dropped = [p for p in paths if unknown & set(p)]
        if dropped:
            notes.append(
                f"LLM planner: dropped {len(dropped)} relation path(s) naming relations not in this graph "
                f"({', '.join(sorted(unknown))})"
            )
        return [p for p in paths if not unknown & set(p)]


def _planner_name(planner: PathPlanner) -> str:
    """A planner as a note names it: its checkpoint, else its name."""
    return planner.checkpoint.name if planner.checkpoint is not None else planner.name


class DeferredPlanner(PathPlanner):
    """A trained planner loaded on its first `plan` call: the LLM usually answers, and loading the
    fallback's weights and embedding model for every process would cost more than most plans."""

    def __init__(self, name: str, load: Callable[[], PathPlanner | None]):
        self.name, self._load = name, load
        self._planner: PathPlanner | None = None

    def plan(self, graph: Graph, reading: QuestionReading, topics: Topics, names: Mapping[str, str]) -> Plan:
        if self._planner is None:
            self._planner = self._load()
        if self._planner is None:
            raise KgdbError(f"{self.name} holds no path planner")
        return self._planner.plan(graph, reading, topics, names)

    @contextmanager
    def question(self) -> Iterator[None]:
        """The loaded planner's block; before its first plan nothing is loaded, and nothing is shared."""
        if self._planner is None:
            yield
            return
        with self._planner.question():
            yield


def llm_planner(graph: Graph, settings: Settings, checkpoint: str | None = None) -> LLMPathPlanner:
    """The LLM planner on the configured endpoint (`LLMNotConfigured` without one), falling back to
    the trained ranker or planner for this graph when there is one, else to the portable ranker
    shipped with kgdb (loaded only if needed)."""
    from kgdb.cypher.tables import graph_fingerprint
    from kgdb.models.checkpoints import NoCheckpointError, checkpoint_for_graph, find_checkpoint
    from kgdb.qa.reasoners.openai_compatible import OpenAIReasoner
    from kgdb.rrp.model_choice import load_ranker
    from kgdb.rrp.path_ranker import RANKER
    from kgdb.rrp.planners import PLANNER, load_planner

    require_planner_llm(settings)
    fallback = None
    try:
        if checkpoint:
            ckpt = find_checkpoint(checkpoint, settings.checkpoints_dir)
        else:
            fingerprint = graph_fingerprint(graph)[0]
            try:
                ckpt = checkpoint_for_graph(settings.checkpoints_dir, RANKER, fingerprint)
            except NoCheckpointError:
                ckpt = checkpoint_for_graph(settings.checkpoints_dir, PLANNER, fingerprint)
        loaders: dict[str | None, Callable[[Graph, Settings, str], PathPlanner | None]] = {
            RANKER: load_ranker,
            PLANNER: load_planner,
        }
        load = loaders.get(ckpt.config.get("retriever"))
        if load is not None:
            fallback = DeferredPlanner(ckpt.name, lambda: load(graph, settings, str(ckpt.path)))
    except NoCheckpointError:
        from kgdb.models.default import shipped_checkpoint

        shipped = None if checkpoint else shipped_checkpoint(RANKER)
        if shipped is not None:  # nothing trained on this graph: the portable ranker shipped with kgdb
            fallback = DeferredPlanner(
                f"the portable {RANKER} shipped with kgdb", lambda: load_ranker(graph, settings, str(shipped))
            )
    return LLMPathPlanner(OpenAIReasoner.from_settings(settings), fallback=fallback)
