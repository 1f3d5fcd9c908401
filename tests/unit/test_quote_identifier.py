"""Cypher identifiers (relation types, labels) are quoted with their backticks escaped."""

from kgdb.cypher import quote_identifier


def test_quote_identifier_escapes_backticks():
    assert quote_identifier("a`b") == "`a``b`"
