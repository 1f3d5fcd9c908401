"""Real MCP clients for the tests of kgdb's graph tools: the SDK's stdio client starting `kgdb mcp` as a
subprocess, and its streamable-HTTP client against a real uvicorn server hosting a FastAPI app."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import uvicorn
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from kgdb.server_home import free_port
from support.cli import KGDB


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """`app` served by uvicorn on a free loopback port in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@asynccontextmanager
async def stdio_session(env: dict[str, str], *args: str) -> AsyncIterator[ClientSession]:
    """A session with `kgdb mcp ARGS` started as an MCP client starts it."""
    params = StdioServerParameters(command=KGDB[0], args=[*KGDB[1:], "mcp", *args], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """A session with the MCP endpoint at `url` (e.g. http://127.0.0.1:PORT/mcp)."""
    async with (
        create_mcp_http_client(headers=headers) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured result; fails the test on a tool error. The text content is the same data as JSON."""
    result = await session.call_tool(name, arguments)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, f"{name} failed: {text}"
    assert result.structured_content is not None
    assert json.loads(text) == result.structured_content
    return result.structured_content


async def refused(session: ClientSession, name: str, **arguments: Any) -> str:
    """The message of a tool error (fails the test when the call succeeds)."""
    result = await session.call_tool(name, arguments)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert result.is_error, f"{name} succeeded: {text[:500]}"
    assert "Traceback" not in text
    return text
