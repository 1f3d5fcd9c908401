"""The range a model setting accepts, declared on its `Config` field and checked by
`kgdb.models.registry.make_config` wherever values come in (`--set k=v`, a checkpoint's config.json).

Beside the models rather than inside them: the numpy path ranker's config (`kgdb.scoring`, which
imports no model code) declares its ranges too.
"""

from __future__ import annotations

from dataclasses import Field, field
from typing import Any


def bounded(default: Any, *, ge: float | None = None, gt: float | None = None, lt: float | None = None) -> Any:
    """A dataclass field whose value must be >= `ge`, > `gt` and < `lt` (those given)."""
    return field(default=default, metadata={k: v for k, v in (("ge", ge), ("gt", gt), ("lt", lt)) if v is not None})


def out_of_range(f: Field, value: Any) -> str | None:
    """What `value` violates of `f`'s range ("at least 1", …), or None when it is inside."""
    m = f.metadata
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not m:
        return None
    inside = (
        ("ge" not in m or value >= m["ge"])
        and ("gt" not in m or value > m["gt"])
        and ("lt" not in m or value < m["lt"])
    )
    if inside:
        return None
    parts = (
        ([f"at least {m['ge']}"] if "ge" in m else [])
        + ([f"above {m['gt']}"] if "gt" in m else [])
        + ([f"below {m['lt']}"] if "lt" in m else [])
    )
    return " and ".join(parts)
