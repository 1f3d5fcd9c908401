"""What the test modules share: small graphs and question sets, builders of hand-made tensors, the
OpenAI-protocol test server, plugins defined outside kgdb, and helpers that run `kgdb` as a user
would. Plain code only: shared fixtures live in the conftest.py of the narrowest folder that uses
them (tests/conftest.py, tests/db/conftest.py). No test module imports another test module."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
FIXTURES = ROOT / "tests" / "fixtures"  # hand-written input files
