"""An agent-style session with kgdb's MCP graph tools, printed as a transcript (docs/guide/mcp.md shows its
output). It starts `kgdb mcp` as an MCP client does, over stdio, and drives the tools the way an agent
would: link the question's entities, rank the topic's relation paths, follow the best one, and answer
from the entities it reaches; `ask` then answers the same question in one call for comparison.

    KGDB_NEO4J_URI=bolt://localhost:7687 KGDB_NEO4J_PASSWORD=... .venv/bin/python benchmarks/mcp_transcript.py \\
        ["What is the capital of France?"]

Connection settings come from the environment, as for any `kgdb` command; the graph is read, never written.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

QUESTION = "What is the capital of France?"


def kgdb_command() -> tuple[str, list[str]]:
    """`kgdb mcp` from this interpreter's environment (its `kgdb` script, else `python -m kgdb`)."""
    script = Path(sys.executable).with_name("kgdb")
    if script.exists():
        return str(script), ["mcp"]
    found = shutil.which("kgdb")
    return (found, ["mcp"]) if found else (sys.executable, ["-m", "kgdb", "mcp"])


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call, printed as the agent sends it and as the server answers (its JSON data)."""
    print(f"> {name} {json.dumps(arguments, ensure_ascii=False)}")
    result = await session.call_tool(name, arguments)
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        print(f"< error: {text}\n")
        raise SystemExit(1)
    data = result.structured_content or {}
    print("< " + json.dumps(data, ensure_ascii=False, indent=2).replace("\n", "\n  ") + "\n")
    return data


async def session_for(question: str) -> None:
    command, args = kgdb_command()
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        print(f"# tools: {', '.join(t.name for t in tools.tools)}\n")
        linked = await call(session, "link_entities", {"text": question, "limit": 3})
        topic = linked["entities"][0]
        ranked = await call(session, "relation_paths", {"question": question, "topic": topic["id"], "limit": 3})
        best = ranked["paths"][0]
        reached = await call(
            session,
            "follow",
            {"entity": topic["id"], "relations": best["relations"], "directions": best["directions"]},
        )
        names = [e["name"] for e in reached["entities"]]
        print(f"# answer from the best path: {json.dumps(names, ensure_ascii=False)}\n")
        await call(session, "ask", {"question": question})


def main() -> None:
    anyio.run(session_for, sys.argv[1] if len(sys.argv) > 1 else QUESTION)


if __name__ == "__main__":
    main()
