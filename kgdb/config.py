"""Typed settings: defaults < kgdb.toml < KGDB_* environment < command-line overrides."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tomllib
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any, TypedDict

from platformdirs import user_cache_dir, user_data_dir

from kgdb.errors import InputError
from kgdb.limits import (  # noqa: E402
    DENSE_THRESHOLD,
    FETCH_CHUNK,
    FETCH_HUB_SCAN,
    FETCH_MAX_TRIPLES,
    RRP_JOINT_PATHS,
    RRP_PREFIXES,
    RRP_STEP_SCAN,
)

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"


class EmbeddingMode(str, Enum):
    """When entity names are embedded (`kgdb load ... --embeddings`; the Bolt and --bulk paths share it)."""

    eager = "eager"  # during the load: the graph is complete when the load ends
    lazy = "lazy"  # on first use (retrieval, linking, training) or by `kgdb embed`
    auto = "auto"  # eager up to AUTO_LAZY_ABOVE names to embed, lazy above


# ~100k names take 2-4 minutes on 2 CPU cores (450-760 names/s): beyond that a load waits longer for
# embeddings than for its triples, while questions touch a small share of the entities.
AUTO_LAZY_ABOVE = 100_000
EMBEDDINGS_HELP = (
    "When to embed entity names: eager (during the load), lazy (on first use, or `kgdb embed`), "
    f"auto (eager up to {AUTO_LAZY_ABOVE:,} names to embed, else lazy). Relations are always embedded."
)


def resolve_embedding_mode(mode: EmbeddingMode | str, names_to_embed: int) -> EmbeddingMode:
    """eager or lazy: what `auto` means for a load that leaves `names_to_embed` entity names without a vector."""
    mode = EmbeddingMode(mode)
    if mode is EmbeddingMode.auto:
        return EmbeddingMode.lazy if names_to_embed > AUTO_LAZY_ABOVE else EmbeddingMode.eager
    return mode


def mask_uri(uri: str) -> str:
    """The URI with the password of any `user:password@` part replaced, for every message and table."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        scheme, rest = "", uri
    authority, slash, path = rest.partition("/")
    if "@" not in authority:
        return uri
    userinfo, _, host = authority.rpartition("@")
    user = userinfo.split(":", 1)[0]
    masked = f"{user}:********@{host}" if ":" in userinfo else f"{user}@{host}"
    return f"{scheme}{sep}{masked}{slash}{path}"


def _toml_path() -> Path:
    return Path(os.environ.get("KGDB_CONFIG", "kgdb.toml"))


class SecretStr:
    """A secret that prints as ******** in every repr, log and table; `get_secret_value()` reads it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = str(value)

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "SecretStr('********')" if self._value else "SecretStr('')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretStr) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


# Settings are a stdlib dataclass read by `_coerce` rather than a pydantic-settings model: importing
# pydantic costs ~0.2 s, a third of the start-up budget of `kgdb status` and `kgdb runs list`.
class FetchBounds(TypedDict):
    """The bounds of a subgraph fetch, typed so that `**settings.fetch_bounds` type-checks."""

    chunk: int
    max_triples: int
    hub_scan: int


@dataclasses.dataclass(init=False)
class Settings:
    """Everything kgdb can be told. Field `x` is read from env var `KGDB_X` or key `x` in kgdb.toml;
    explicit keyword arguments win over both."""

    neo4j_uri: str = "bolt://localhost:7687"
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr = dataclasses.field(default_factory=lambda: SecretStr("kgdb-password"))
    neo4j_database: str = "neo4j"
    # Where `kgdb neo4j install` assembles the local server (jars, conf, data, logs).
    neo4j_home: Path = dataclasses.field(default_factory=lambda: Path(user_data_dir("kgdb")) / "neo4j")
    neo4j_bolt_port: int = 7687
    neo4j_http_port: int = 7474
    neo4j_listen_address: str = "127.0.0.1"
    # None: sized from available memory at `install`/`start`.
    neo4j_heap: str | None = None
    neo4j_pagecache: str | None = None
    # Degree from which a node's relationships are grouped by type (kgdb.limits.DENSE_THRESHOLD).
    neo4j_dense_threshold: int = DENSE_THRESHOLD

    # Bounded multi-hop fetches (kgdb.limits): frontier entities per transaction, triples per subgraph,
    # hub relationships scanned per level beyond the first (per hop, too, of the RRP path enumeration).
    fetch_chunk: int = FETCH_CHUNK
    fetch_max_triples: int = FETCH_MAX_TRIPLES
    fetch_hub_scan: int = FETCH_HUB_SCAN
    # Relation paths the RRP path enumeration continues per hop (kgdb.limits.RRP_PREFIXES).
    rrp_prefixes: int = RRP_PREFIXES
    # Relationships of one step from one entity that RRP reads whole; bigger steps are sampled (kgdb.limits.RRP_STEP_SCAN).
    rrp_step_scan: int = RRP_STEP_SCAN
    # Relation paths per topic joined on the answer for a question with several topics (kgdb.limits.RRP_JOINT_PATHS).
    rrp_joint_paths: int = RRP_JOINT_PATHS
    # What orders RRP's answers and says how sure it is: "default" (the answer model shipped with kgdb), a
    # directory `kgdb train answer-model` wrote, or "none" (the path ranker's order, no confidence).
    answer_model: str = "default"

    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    embedding_batch_size: int = 256
    # "auto" picks CUDA when present, else CPU.
    device: str = "auto"

    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    # The deadline of one LLM request: connect and every read of one attempt, however the server sends its reply.
    # None: 600 s for a server on this machine (a CPU reads a long prompt slowly), 60 s otherwise.
    llm_timeout: float | None = None
    # The deadline of one question: every attempt, retry and follow-up turn together. None: 2 x llm_timeout + 10 s.
    llm_ask_timeout: float | None = None
    llm_max_retries: int = 3
    # None: learnt from the endpoint (vLLM's /v1/models, llama.cpp's /props); set it for servers that do not say.
    llm_context: int | None = None
    # Requests in flight at once per endpoint; None: the server's slots (one for a local llama-cpp-python server).
    llm_concurrency: int | None = None
    # None: what the answer needs (a JSON list of names, or a short reply), within what the context leaves.
    llm_max_tokens: int | None = None
    # auto: answers as JSON constrained to the evidence's names where the endpoint supports it; text: prose,
    # read tolerantly (SmolLM2-135M answers an empty list under the schema); json: always the schema
    llm_reply_format: str = "auto"

    cache_dir: Path = dataclasses.field(default_factory=lambda: Path(user_cache_dir("kgdb")))
    runs_dir: Path = dataclasses.field(default_factory=lambda: Path("runs"))
    checkpoints_dir: Path = dataclasses.field(default_factory=lambda: Path("checkpoints"))

    def __init__(self, **explicit: Any) -> None:
        fields = {f.name: f for f in dataclasses.fields(self)}
        if unknown := sorted(set(explicit) - set(fields)):
            raise TypeError(f"unknown setting(s): {', '.join(unknown)}")
        for name, hint in _RETIRED.items():
            if f"KGDB_{name.upper()}" in os.environ:
                raise InputError(f"environment variable KGDB_{name.upper()} is no longer read: {hint}")
        toml = _read_toml()
        if unknown := sorted(set(toml) - set(fields)):
            hints = "; ".join(_RETIRED[k] for k in unknown if k in _RETIRED)
            raise InputError(
                f"unknown key(s) {', '.join(unknown)}" + (f" ({hints})" if hints else ""), path=_toml_path()
            )
        given: set[str] = set()
        for name, f in fields.items():
            env = f"KGDB_{name.upper()}"
            if name in explicit:
                value, source = explicit[name], f"setting {name}"
            elif env in os.environ:
                value, source = os.environ[env], f"environment variable {env}"
            elif name in toml:
                value, source = toml[name], f"{_toml_path()}: key {name}"
            else:
                value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
                setattr(self, name, value)
                continue
            given.add(name)
            setattr(self, name, _setting(name, value, source))
        # Setting only the Bolt port (for `kgdb neo4j start`) must also move where kgdb connects;
        # an explicit URI always wins.
        if "neo4j_bolt_port" in given and "neo4j_uri" not in given:
            self.neo4j_uri = f"bolt://localhost:{self.neo4j_bolt_port}"

    def with_overrides(self, **overrides: Any) -> "Settings":
        """Copy with the given non-None values replaced (CLI flags such as --uri)."""
        # Not dataclasses.replace: it would call __init__ and read the environment again.
        out = object.__new__(Settings)
        out.__dict__.update(self.__dict__)
        for name, value in overrides.items():
            if value is None:
                continue
            if name not in _FIELD_TYPES:
                raise TypeError(f"unknown setting: {name}")
            setattr(out, name, _setting(name, value, f"setting {name}"))
        return out

    @property
    def fetch_bounds(self) -> FetchBounds:
        """The bounds of a subgraph fetch, as the keyword arguments every fetch function takes."""
        return {"chunk": self.fetch_chunk, "max_triples": self.fetch_max_triples, "hub_scan": self.fetch_hub_scan}

    def masked(self) -> dict[str, Any]:
        """Effective settings as plain JSON-able values, secrets masked."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            name, value = f.name, getattr(self, f.name)
            if isinstance(value, SecretStr):
                value = "********" if value.get_secret_value() else ""
            elif name.endswith("_uri") or name.endswith("_url"):
                value = mask_uri(value) if isinstance(value, str) else value
            elif isinstance(value, Path):
                value = str(value)
            out[name] = value
        return out


_FIELD_TYPES: dict[str, Any] = typing.get_type_hints(Settings)
# Settings that were replaced: naming one is an error that says what to use, not a silent no-op.
_RETIRED = {
    "fetch_max_hubs": "use fetch_hub_scan / KGDB_FETCH_HUB_SCAN, the relationships of hubs scanned per fetch level (default 10,000)",
}


def _read_toml() -> dict[str, Any]:
    """The keys of kgdb.toml, or of the file KGDB_CONFIG names (which must then exist: a typo there
    would otherwise run every command on the defaults without a word)."""
    named = os.environ.get("KGDB_CONFIG")
    if named is not None and not named.strip():
        raise InputError(
            f"is set but empty: name a config file, or unset it ({os.devnull} reads none)", path="KGDB_CONFIG"
        )
    path = _toml_path()
    if named is None and not path.is_file():
        return {}
    if not path.exists():
        raise InputError("config file not found (named by KGDB_CONFIG)", path=path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read the config file ({err.strerror})", path=path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 (invalid byte at offset {err.start}); save it as UTF-8", path=path) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"not valid TOML ({err})", path=path) from None
    except RecursionError:
        raise InputError("not valid TOML (nested too deep)", path=path) from None


# The smallest value a number setting takes (ports also have a largest): below it a setting is a typo,
# and `neo4j_bolt_port = -1` would only fail later as an unreadable URI.
_LEAST = {
    "neo4j_bolt_port": 1,
    "neo4j_http_port": 1,
    "neo4j_dense_threshold": 1,
    "fetch_chunk": 1,
    "fetch_max_triples": 1,
    "fetch_hub_scan": 1,
    "rrp_prefixes": 1,
    "rrp_step_scan": 1,
    "rrp_joint_paths": 0,
    "embedding_batch_size": 1,
    "llm_timeout": 0,
    "llm_ask_timeout": 0,
    "llm_max_retries": 0,
    "llm_context": 1,
    "llm_concurrency": 1,
    "llm_max_tokens": 1,
}
_MOST = {"neo4j_bolt_port": 65535, "neo4j_http_port": 65535}


def _setting(name: str, value: Any, source: str) -> Any:
    """`value` as setting `name`'s type, inside its range."""
    out = _coerce(value, _FIELD_TYPES[name], source)
    least, most = _LEAST.get(name), _MOST.get(name)
    if out is not None and ((least is not None and out < least) or (most is not None and out > most)):
        span = f"between {least} and {most}" if most is not None else f"at least {least}"
        raise InputError(f"{source} must be {span}, got {value!r}")
    return out


def _coerce(value: Any, kind: Any, source: str) -> Any:
    """`value` (a string from the environment, a TOML value or a Python value) as the field's type."""
    if isinstance(kind, types.UnionType):  # `T | None`
        if value is None:
            return None
        kind = next(k for k in kind.__args__ if k is not type(None))
    if kind in (int, float):
        return _number(value, kind, source)
    if isinstance(value, kind):
        return value
    if kind in (str, Path, SecretStr) and isinstance(value, (str, Path)):
        return kind(str(value)) if kind is not str else str(value)
    raise InputError(f"{source} must be {kind.__name__}, got {value!r}")


def _number(value: Any, kind: type, source: str) -> int | float:
    """An int or a finite float; `true` is not 1 and 7687.5 is not a port."""
    want = "an integer" if kind is int else "a number"
    out: int | float | None = None
    if not isinstance(value, bool) and isinstance(value, (int, float, str)):
        try:
            out = kind(value)
        except (TypeError, ValueError, OverflowError):
            out = None
        if kind is int and isinstance(value, float):
            out = int(value) if math.isfinite(value) and value.is_integer() else None
    if out is None:
        raise InputError(f"{source} must be {want}, got {value!r}")
    if isinstance(out, float) and not math.isfinite(out):
        raise InputError(f"{source} must be a finite number, got {value!r}")
    return out


def load_settings(**overrides: Any) -> Settings:
    return Settings().with_overrides(**overrides)


def dump_json(obj: Any, path: Path) -> None:
    """Write JSON deterministically (sorted keys) next to checkpoints and results."""
    from kgdb.private_files import private_dir, write_private_text

    private_dir(path.parent)
    write_private_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")
