"""Typed settings: defaults < kgdb.toml < KGDB_* environment < command-line overrides."""

from __future__ import annotations

import json
import os
from enum import Enum
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir, user_data_dir
from pydantic import Field, SecretStr, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from kgdb.limits import FETCH_CHUNK, FETCH_MAX_HUBS, FETCH_MAX_TRIPLES  # noqa: E402

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


class Settings(BaseSettings):
    """Everything kgdb can be told. Field `x` is read from env var `KGDB_X` or key `x` in kgdb.toml."""

    model_config = SettingsConfigDict(env_prefix="KGDB_", extra="ignore")

    neo4j_uri: str = "bolt://localhost:7687"
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr = SecretStr("kgdb-password")
    neo4j_database: str = "neo4j"
    # Where `kgdb neo4j install` assembles the local server (jars, conf, data, logs).
    neo4j_home: Path = Field(default_factory=lambda: Path(user_data_dir("kgdb")) / "neo4j")
    neo4j_bolt_port: int = 7687
    neo4j_http_port: int = 7474
    neo4j_listen_address: str = "127.0.0.1"
    # None: sized from available memory at `install`/`start`.
    neo4j_heap: str | None = None
    neo4j_pagecache: str | None = None

    # Bounded multi-hop fetches (kgdb.limits): frontier entities per transaction, triples per subgraph,
    # hubs expanded per level beyond the first.
    fetch_chunk: int = FETCH_CHUNK
    fetch_max_triples: int = FETCH_MAX_TRIPLES
    fetch_max_hubs: int = FETCH_MAX_HUBS

    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    embedding_batch_size: int = 256
    # "auto" picks CUDA when present, else CPU.
    device: str = "auto"

    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout: float = 60.0
    llm_max_retries: int = 3

    cache_dir: Path = Field(default_factory=lambda: Path(user_cache_dir("kgdb")))
    runs_dir: Path = Field(default_factory=lambda: Path("runs"))
    checkpoints_dir: Path = Field(default_factory=lambda: Path("checkpoints"))

    @model_validator(mode="after")
    def _uri_follows_bolt_port(self) -> "Settings":
        # Setting only the Bolt port (for `kgdb neo4j start`) must also move where kgdb connects;
        # an explicit URI always wins.
        if "neo4j_uri" not in self.model_fields_set and "neo4j_bolt_port" in self.model_fields_set:
            self.neo4j_uri = f"bolt://localhost:{self.neo4j_bolt_port}"
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml = _toml_path()
        if toml.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml))
        return tuple(sources)

    def with_overrides(self, **overrides: Any) -> "Settings":
        """Copy with the given non-None values replaced (CLI flags such as --uri)."""
        values = {k: v for k, v in overrides.items() if v is not None}
        if "neo4j_password" in values and not isinstance(values["neo4j_password"], SecretStr):
            values["neo4j_password"] = SecretStr(values["neo4j_password"])
        return self.model_copy(update=values)

    def masked(self) -> dict[str, Any]:
        """Effective settings as plain JSON-able values, secrets masked."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = "********" if value.get_secret_value() else ""
            elif name.endswith("_uri") or name.endswith("_url"):
                value = mask_uri(value) if isinstance(value, str) else value
            elif isinstance(value, Path):
                value = str(value)
            out[name] = value
        return out


def load_settings(**overrides: Any) -> Settings:
    return Settings().with_overrides(**overrides)


def dump_json(obj: Any, path: Path) -> None:
    """Write JSON deterministically (sorted keys) next to checkpoints and results."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
