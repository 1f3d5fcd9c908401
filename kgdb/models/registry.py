"""The retriever registry: one name -> one `Retriever` class, so the CLI, training, evaluation,
checkpoints and `kgdb ask` work for any registered retriever without edits elsewhere.

Built-ins (`kgdb.models.retrievers.BUILTIN`) register on the first look-up; third-party packages register
through the `kgdb.retrievers` entry-point group (the entry point names a module or a class);
a script or test registers with `@register` before calling kgdb.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, ClassVar, Protocol

from kgdb.bounds import out_of_range
from kgdb.errors import InputError
from kgdb.models.base import Retriever
from kgdb.registry import Registry, UnknownNameError


class Configurable(Protocol):
    """What `make_config` reads of a model class: its name and its `Config` dataclass (a registered
    retriever's, or a model's that is no retriever, such as the path ranker)."""

    name: ClassVar[str]
    Config: ClassVar[type]


class UnknownRetrieverError(UnknownNameError):
    """No retriever is registered under that name."""


def _check(cls: type[Retriever]) -> None:
    if not dataclasses.is_dataclass(cls.Config):
        raise TypeError(f"{cls.__name__}.Config must be a dataclass")
    if cls.label_kind not in ("triples", "entities"):
        raise ValueError(f"{cls.__name__}.label_kind must be 'triples' or 'entities', got {cls.label_kind!r}")


def _builtins() -> None:
    from kgdb.models.retrievers import BUILTIN

    for cls in BUILTIN:
        RETRIEVERS.register(cls)


RETRIEVERS: Registry[type[Retriever]] = Registry(
    "retriever",
    "kgdb.retrievers",
    "--retriever",
    accepts=lambda obj: isinstance(obj, type) and issubclass(obj, Retriever),
    expected="a kgdb.models.base.Retriever subclass",
    summary_of=lambda cls: cls.description or f"the {cls.name} retriever",
    check=_check,
    builtins=_builtins,
    error=UnknownRetrieverError,
)


def register(cls: type[Retriever]) -> type[Retriever]:
    """Class decorator: make `cls` available under `cls.name` (a later registration replaces it)."""
    return RETRIEVERS.register(cls)


def get(name: str) -> type[Retriever]:
    return RETRIEVERS.get(name)


def names() -> list[str]:
    return RETRIEVERS.names()


def make_config(cls: type[Configurable], values: dict[str, Any], *, where: str = "--set") -> Any:
    """A typed `cls.Config` from loose values (strings from the command line are converted by field type)."""
    fields = {f.name: f for f in dataclasses.fields(cls.Config)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        known = ", ".join(fields) or "none"
        raise InputError(f"{cls.name} has no setting {', '.join(unknown)} (settings: {known})", path=where)
    hints = typing.get_type_hints(cls.Config)
    typed = {}
    for key, value in values.items():
        kind = hints.get(key)
        if isinstance(value, str) and kind in (int, float, bool):
            try:
                value = _parse_bool(value) if kind is bool else kind(value)
            except ValueError:
                wanted = "true or false" if kind is bool else f"a {kind.__name__}"
                raise InputError(f"{cls.name} setting {key} takes {wanted}, got {value!r}", path=where) from None
        if (violated := out_of_range(fields[key], value)) is not None:
            raise InputError(f"{cls.name} setting {key} must be {violated}, got {value!r}", path=where)
        typed[key] = value
    try:
        return cls.Config(**typed)
    except TypeError as exc:
        raise InputError(f"{cls.name} settings: {exc}", path=where) from exc


def _parse_bool(text: str) -> bool:
    word = text.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)  # a typo ("ture") must not read as false


def with_inference_settings(model: Retriever, values: dict[str, Any], *, where: str = "--set") -> Retriever:
    """`model` with some of its `inference_settings` changed (a trained model's weights do not
    depend on them); any other field is refused, naming the ones that may change."""
    cls = type(model)
    fixed = sorted(set(values) - set(cls.inference_settings))
    if fixed:
        allowed = ", ".join(cls.inference_settings) or "none"
        raise InputError(
            f"{cls.name} setting {', '.join(fixed)} is fixed by training (inference settings: {allowed})", path=where
        )
    if values:
        typed = make_config(cls, values, where=where)
        model.cfg = dataclasses.replace(model.cfg, **{k: getattr(typed, k) for k in values})
    return model


def build(name: str, config: dict[str, Any] | None = None, embedding_dim: int = 0) -> Retriever:
    """A fresh (untrained) retriever of a registered name."""
    cls = get(name)
    cfg = make_config(
        cls, {k: v for k, v in (config or {}).items() if k not in ("retriever", "embedding_dim")}, where="config"
    )
    return cls(cfg, embedding_dim)
