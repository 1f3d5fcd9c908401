"""Browser's HTTP port given as the Bolt URI is named as such in the one-line error (a Bolt port
answers HTTP too, so "it answers HTTP" alone proved nothing)."""

from __future__ import annotations

import http.server
import threading

import pytest

from kgdb.cypher.connection_problems import unreachable_reason


@pytest.fixture
def http_port():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_an_http_port_given_as_bolt_is_still_named(http_port):
    assert "HTTP/Browser port" in unreachable_reason(f"bolt://127.0.0.1:{http_port}")
