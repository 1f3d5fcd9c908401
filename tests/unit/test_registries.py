"""The one registry kgdb looks names up in: registering, look-ups and the error an unknown name raises,
help summaries, built-ins, derived entries, and entry points read on the first look-up (an object,
a module that registers itself, anything else refused by name)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from itertools import count

import pytest

from kgdb.errors import InputError
from kgdb.registry import Registry, UnknownNameError

GROUPS = count()


@dataclass(frozen=True)
class Kind:
    name: str
    summary: str


class UnknownKindError(UnknownNameError):
    pass


def registry(**options) -> Registry[Kind]:
    group = f"kgdb.test_kinds_{next(GROUPS)}"  # a group of its own: no other test's entry points
    defaults = dict(accepts=lambda obj: isinstance(obj, Kind), expected="a Kind", error=UnknownKindError)
    return Registry("test kind", group, "--kind", **{**defaults, **options})


def test_registered_entries_are_looked_up_listed_and_summarised():
    kinds = registry()
    first = kinds.register(Kind("beta", "the second letter."))
    kinds.register(Kind("alpha_1", "the first letter"))
    assert kinds.get("beta") is first and kinds.find("beta") is first and kinds.find("nope") is None
    assert kinds.names() == ["alpha_1", "beta"] and "beta" in kinds and "nope" not in kinds
    assert [name for name, _ in kinds.items()] == ["alpha_1", "beta"]
    assert kinds.summary("beta") == "the second letter."
    assert kinds.summaries() == ["alpha_1 (the first letter)", "beta (the second letter)"]
    replaced = kinds.register(Kind("beta", "replaced"))
    assert kinds.get("beta") is replaced


def test_an_unknown_name_names_the_parameter_and_the_registered_names():
    kinds = registry(choices=("auto",))
    kinds.register(Kind("one", "1"))
    kinds.register(Kind("two", "2"))
    with pytest.raises(UnknownKindError) as err:
        kinds.get("three")
    assert isinstance(err.value, InputError) and err.value.path == "--kind"
    assert str(err.value) == "--kind: unknown test kind 'three'; choose one of auto, one, two"


def test_bad_entries_are_refused():
    def no_x(kind: Kind) -> None:
        if "x" in kind.name:
            raise ValueError(f"{kind.name}: no x")

    kinds = registry(check=no_x, reserved=("auto",))
    with pytest.raises(TypeError, match="is not a Kind"):
        kinds.register("plain text")  # type: ignore[arg-type]
    for bad in ("", "two words", "dots.too", "auto"):
        with pytest.raises(ValueError, match="letters, digits, - or _"):
            kinds.register(Kind(bad, "bad"))
    with pytest.raises(ValueError, match="ax: no x"):
        kinds.register(Kind("ax", "checked"))
    assert kinds.names() == []


def test_builtins_load_once_and_yield_to_what_a_script_registered_first():
    calls = []

    def builtins() -> None:
        calls.append(1)
        kinds.register(Kind("shipped", "built in"))
        kinds.register(Kind("mine", "built in"))

    kinds = registry(builtins=builtins)
    kinds.register(Kind("mine", "the script's"))
    assert calls == []  # nothing loads before the first look-up
    assert kinds.names() == ["mine", "shipped"] and kinds.summary("mine") == "the script's"
    kinds.names()
    assert calls == [1]


def test_derived_entries_are_computed_at_each_look_up_and_registered_ones_shadow_them():
    derived = {"made": Kind("made", "derived"), "both": Kind("both", "derived")}
    kinds = registry(derived=lambda: dict(derived))
    kinds.register(Kind("both", "registered"))
    assert kinds.names() == ["both", "made"] and kinds.summary("both") == "registered"
    derived["late"] = Kind("late", "added after the first look-up")
    assert kinds.get("late").summary == "added after the first look-up"


@pytest.fixture
def plugin_site(tmp_path, monkeypatch):
    """Writes a module and a distribution declaring `entry_points` for a group; returns the writer."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(module: str, source: str, group: str, entries: dict[str, str]) -> None:
        (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
        info = tmp_path / f"{module}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n", encoding="utf-8")
        lines = "".join(f"{name} = {target}\n" for name, target in entries.items())
        (info / "entry_points.txt").write_text(f"[{group}]\n{lines}", encoding="utf-8")
        monkeypatch.delitem(sys.modules, module, raising=False)

    return write


PLUGIN = """
import sys

here = sys.modules[{module!r}]  # this test module: its Kind class and the registry under test
KIND = here.Kind("by-object", "named by its entry point")
here.UNDER_TEST[-1].register(here.Kind("by-module", "registered on import"))
"""
UNDER_TEST: list[Registry[Kind]] = []


def test_entry_points_load_on_the_first_look_up_as_objects_or_self_registering_modules(plugin_site):
    kinds = registry()
    UNDER_TEST.append(kinds)
    entries = {"by-object": "kgdb_test_plugin_a:KIND", "mod": "kgdb_test_plugin_a"}
    plugin_site("kgdb_test_plugin_a", PLUGIN.format(module=__name__), kinds.group, entries)
    assert "kgdb_test_plugin_a" not in sys.modules
    assert kinds.names() == ["by-module", "by-object"]
    assert kinds.summary("by-object") == "named by its entry point"
    assert kinds.get("by-module").summary == "registered on import"


def test_an_entry_point_naming_anything_else_is_refused_naming_it(plugin_site):
    kinds = registry()
    plugin_site("kgdb_test_plugin_b", "WRONG = 42\n", kinds.group, {"wrong": "kgdb_test_plugin_b:WRONG"})
    with pytest.raises(TypeError) as err:
        kinds.get("wrong")
    message = str(err.value)
    assert "entry point wrong = kgdb_test_plugin_b:WRONG" in message and kinds.group in message
    assert "neither a Kind nor a module" in message
