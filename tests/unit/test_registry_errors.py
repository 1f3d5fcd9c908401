"""The retriever registry names what is wrong: an unknown retriever (listing the registered ones), an
unknown setting, a value of the wrong type, and a class that is no retriever."""

from __future__ import annotations

import pytest

from kgdb.errors import InputError
from kgdb.models import registry
from support.plugins import ToyConfig, ToyRetriever

pytestmark = pytest.mark.usefixtures("one_thread")


def test_registry_rejects_bad_names_and_settings():
    with pytest.raises(InputError, match="unknown retriever 'nope'.*toy-test"):
        registry.get("nope")
    with pytest.raises(InputError, match="no setting bogus.*scale"):
        registry.make_config(ToyRetriever, {"bogus": "1"})
    with pytest.raises(InputError, match="takes a float"):
        registry.make_config(ToyRetriever, {"scale": "big"})
    assert registry.make_config(ToyRetriever, {"scale": "2.5"}) == ToyConfig(2.5)
    with pytest.raises(TypeError):
        registry.register(dict)  # type: ignore[arg-type]
