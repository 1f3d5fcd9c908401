"""The page to ask from: `kgdb serve` answers `/` with it, so a person can ask the graph a question in a web
browser and see the answers, their evidence drawn as a graph, and a link to the same evidence in Neo4j
Browser. The page is static (kgdb/service/static/: HTML, CSS, its script and the vendored Cytoscape.js,
no CDN); it calls `POST /v1/ask` like any other client.

Only the files listed here are served, each with its media type, and the page carries a Content Security
Policy that allows nothing but this origin's own scripts and styles: what the graph holds reaches the
page as text, and nothing it holds can load or run anything.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, Response

__all__ = ["STATIC", "router"]

STATIC = Path(__file__).parent / "static"
_FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "cytoscape.min.js": "text/javascript; charset=utf-8",
}
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

router = APIRouter(include_in_schema=False)


@router.api_route("/", methods=["GET", "HEAD"])
def page() -> Response:
    return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8", headers=_HEADERS)


@router.api_route("/static/{name}", methods=["GET", "HEAD"])
def static(name: str) -> Response:
    if name not in _FILES:  # a fixed list: no path from the request ever reaches the filesystem
        raise HTTPException(status_code=404, detail=f"no such file: /static/{name}")
    return FileResponse(STATIC / name, media_type=_FILES[name], headers=_HEADERS)
