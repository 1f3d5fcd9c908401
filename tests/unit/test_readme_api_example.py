"""The README's "Python API" example (README.md, one ```python block between `<!-- api-example:start -->`
and `<!-- api-example:end -->`) and `EXAMPLE` (tests/support/api_example.py), which the database tests
run, are the same code."""

from __future__ import annotations

import pytest

from support.api_example import END, EXAMPLE, START, readme_example

pytestmark = pytest.mark.usefixtures("one_thread")


def test_readme_example_matches_this_file():
    """The README block and `EXAMPLE` must not drift apart."""
    code = readme_example()
    if code is None:
        pytest.skip(f"README.md has no {START} ... {END} section yet")
    assert code.strip() == EXAMPLE.strip()
