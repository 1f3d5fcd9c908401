"""Freebase identifier rules shared by loaders, linking and answer parsing (no database, no torch)."""

from __future__ import annotations

import re

_MID = re.compile(r"^[mg]\.[0-9a-z_]+$")


def normalise_mid(token: str) -> str:
    """`/m/0abc` (FB15k-237, RDF paths) -> `m.0abc`; other tokens unchanged."""
    if token.startswith(("/m/", "/g/")):
        return token[1] + "." + token[3:]
    return token


def normalise_relation(name: str) -> str:
    """`/people/person/nationality` -> `people.person.nationality` (CVT paths joined with '.')."""
    if name.startswith("/"):
        return ".".join(part for part in re.split(r"[/.]", name) if part)
    return name


def is_mid(text: str) -> bool:
    """A Freebase machine id (`m.0abc`, `g.11x`)."""
    return bool(_MID.match(text.strip()))
