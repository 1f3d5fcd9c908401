"""kgdb as a service: an HTTP API (`kgdb serve`), graph tools for LLM agents over MCP (`kgdb mcp`, and
mounted on the HTTP service at `/mcp`), and a page to ask from at `/`.

Everything here holds one `kgdb.api.Kgdb` warm and calls it; no answering logic lives in this package.
"""
