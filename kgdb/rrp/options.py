"""The options of RRP's trainable kinds (`kgdb train rrp-planner | rrp-ranker | rrp`), each declared once:
name, type, default, range and help, read by the command line and `Kgdb.train`."""

from __future__ import annotations

from dataclasses import dataclass, field

from kgdb.pipeline.trainable import EpochOptions, about, option


@dataclass
class PlannerOptions(EpochOptions):
    hops: int = option(3, "The longest relation path the planner plans.", ge=1)


@dataclass
class RankerOptions(EpochOptions):
    model_settings: list[str] = field(
        default_factory=list,
        metadata=about(
            "Ranker hyper-parameter KEY=VALUE (repeatable); planner=NAME picks the trained "
            "planner it reads (default the newest).",
            flag="--set",
        ),
    )
    tune_per_file: int = option(
        300,
        "Val questions per file that choose the answering mode, λ1, θ and the answer closeness "
        "weight (a fixed prefix; 0: no tuning, the checkpoint answers with the defaults).",
        ge=0,
    )
    portable: bool = option(
        False,
        "A ranker for any graph (no planner, no relation ids; reads the graph's relation text table), "
        "trainable on several graphs at once (--on).",
    )
    on: list[str] = field(
        default_factory=list,
        metadata=about(
            "--portable: the Neo4j URI holding each --questions file, in order (one per file; default: --uri for all)."
        ),
    )
    sample_train: int | None = option(None, "N training questions of each file at random (fixed seed).", ge=1)
    sample_val: int | None = option(None, "N val questions of each file at random (fixed seed).", ge=1)
    positive_margin: float | None = option(
        None,
        "Of the best-F1 shortest candidate paths, only those whose question-relation "
        "cosine is within this of the closest are positives (default: all of them).",
    )


@dataclass
class StructuralOptions(EpochOptions):
    hops: int = option(3, "Reasoning steps.", ge=1)
    max_val: int | None = option(None, "Use only the first N validation questions (default 1000).", ge=1)
    resume: bool = option(False, "Continue a killed run from its last finished epoch (a finished run is tuned again).")
    tune_per_file: int = option(
        300,
        "Val questions per file that choose λ1, θ and the answer closeness weight (a fixed prefix; "
        "0: no tuning, the checkpoint answers with the defaults).",
        ge=0,
    )
