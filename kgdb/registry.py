"""One kind of registry for everything kgdb looks up by name: tensor retrievers, question-level
retrievers, relation-path planners, reasoners and trainable kinds. Each registry holds one kind of
object under a name, reads its own entry-point group on the first look-up (so an installed package
plugs in without an edit in kgdb), names the command-line parameter an unknown name is wrong in, and
gives every entry a one-line summary for the help texts.

An entry point names either the object itself or a module that registers its objects when imported.
Nothing heavy is imported here: the CLI builds its help texts from registries before any model loads.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any, Generic, TypeVar

from kgdb.errors import InputError

T = TypeVar("T")

NAME = re.compile(r"^[A-Za-z0-9_-]+$")


@cache
def _installed_entry_points(path: tuple[str, ...]) -> dict[str, tuple[EntryPoint, ...]]:
    """Every entry point installed on `path` (sys.path) by group, read in one scan (a scan per group costs
    ~10 ms); scanned again when sys.path changes."""
    installed = entry_points()
    return {group: tuple(installed.select(group=group)) for group in installed.groups}


class UnknownNameError(InputError):
    """No entry of a registry has that name; `path` is the parameter it was given to."""


class Registry(Generic[T]):
    """Name -> object, with lazily loaded entry points.

    `what` says what the entries are in messages ("reasoner"); `group` is the entry-point group;
    `parameter` the CLI parameter an unknown name is reported against; `accepts` tells an entry from
    anything else an entry point may name, `expected` says what that is in messages; `check` refuses
    an ill-formed entry (TypeError / ValueError); `name_of` / `summary_of` read an entry's name and
    one-line summary; `builtins` registers what kgdb itself ships, once, before the entry points;
    `derived` adds entries computed at each look-up (shadowed by registered ones); `reserved` names
    no entry may take; `error` is the `UnknownNameError` subclass raised for an unknown name, and
    `choices` the names listed before the registered ones in its message (`auto`).
    """

    def __init__(
        self,
        what: str,
        group: str,
        parameter: str,
        *,
        accepts: Callable[[Any], bool],
        expected: str,
        name_of: Callable[[T], str] = lambda entry: entry.name,  # type: ignore[attr-defined]
        summary_of: Callable[[T], str] = lambda entry: entry.summary,  # type: ignore[attr-defined]
        check: Callable[[T], None] | None = None,
        builtins: Callable[[], None] | None = None,
        derived: Callable[[], Mapping[str, T]] | None = None,
        reserved: tuple[str, ...] = (),
        error: type[UnknownNameError] = UnknownNameError,
        choices: tuple[str, ...] = (),
    ):
        self.what, self.group, self.parameter = what, group, parameter
        self.accepts, self.expected = accepts, expected
        self.name_of, self.summary_of, self.check = name_of, summary_of, check
        self.builtins, self.derived = builtins, derived
        self.reserved, self.error, self.choices = reserved, error, choices
        self._entries: dict[str, T] = {}
        self._loaded = False

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, group={self.group!r})"

    # ---- registering ------------------------------------------------------------------------------
    def register(self, entry: T) -> T:
        """Make `entry` available under its name (a later registration replaces it); returns it, so it
        serves as a decorator."""
        if not self.accepts(entry):
            raise TypeError(f"{entry!r} is not {self.expected}")
        name = self.name_of(entry)
        if not isinstance(name, str) or not NAME.match(name) or name in self.reserved:
            other = f" other than {', '.join(map(repr, self.reserved))}" if self.reserved else ""
            raise ValueError(
                f"a {self.what} name must be a non-empty word (letters, digits, - or _){other}, got {name!r}"
            )
        if self.check is not None:
            self.check(entry)
        self._entries[name] = entry
        return entry

    def load(self) -> None:
        """The built-ins, then every entry point of the group; once per process (a look-up calls it)."""
        if self._loaded:
            return
        self._loaded = True
        if self.builtins is not None:
            early = dict(self._entries)  # what a script registered before the first look-up overrides a built-in
            self.builtins()
            self._entries.update(early)
        for ep in _installed_entry_points(tuple(sys.path)).get(self.group, ()):
            obj = ep.load()
            if self.accepts(obj):
                self.register(obj)
            elif not isinstance(obj, ModuleType):  # a module registered its entries when it was imported
                raise TypeError(
                    f"entry point {ep.name} = {ep.value} of group {self.group} names neither {self.expected} "
                    "nor a module"
                )

    # ---- looking up -------------------------------------------------------------------------------
    def _all(self) -> dict[str, T]:
        self.load()
        if self.derived is None:
            return self._entries
        return {**self.derived(), **self._entries}

    def get(self, name: str) -> T:
        """The entry registered as `name`; an unknown name raises `error`, listing the known ones."""
        entries = self._all()
        try:
            return entries[name]
        except KeyError:
            known = ", ".join([*self.choices, *sorted(entries)]) or "none is registered"
            raise self.error(f"unknown {self.what} {name!r}; choose one of {known}", path=self.parameter) from None

    def find(self, name: str | None) -> T | None:
        """The entry registered as `name`, or None."""
        return None if name is None else self._all().get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._all()

    def names(self) -> list[str]:
        return sorted(self._all())

    def items(self) -> list[tuple[str, T]]:
        """(name, entry) pairs, by name."""
        entries = self._all()
        return [(name, entries[name]) for name in sorted(entries)]

    def summary(self, name: str) -> str:
        """One line on what `name` is, for help texts."""
        return self.summary_of(self.get(name))

    def summaries(self) -> list[str]:
        """`name (summary)` of every entry, by name: the pieces of a help text."""
        return [f"{name} ({self.summary_of(entry).rstrip('.')})" for name, entry in self.items()]


def registry_of(
    kind: type[T],
    what: str,
    group: str,
    parameter: str,
    *,
    callables: tuple[str, ...] = ("build",),
    check: Callable[[T], None] | None = None,
    **options: Any,
) -> Registry[T]:
    """A registry of the instances of the dataclass `kind` (`PlannerKind`, `ReasonerKind` ...): anything
    else an entry point names is refused, and so is an entry whose `callables` fields cannot be called
    or that `check` refuses; `options` as `Registry` takes them."""

    registry: Registry[T] = Registry(
        what,
        group,
        parameter,
        accepts=lambda obj: isinstance(obj, kind),
        expected=f"a {kind.__module__}.{kind.__qualname__}",
        **options,
    )

    def checked(entry: T) -> None:
        for field in callables:
            if not callable(getattr(entry, field)):
                raise TypeError(f"{what} {registry.name_of(entry)}: {field} must be callable")
        if check is not None:
            check(entry)

    registry.check = checked
    return registry
