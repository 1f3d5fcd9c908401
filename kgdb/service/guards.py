"""What every request passes before a route sees it: the bearer token and the body size limit.

Both are plain ASGI middleware, so they answer before FastAPI reads or parses anything: a request
without the token is refused unread, and a body larger than the limit is refused from its
Content-Length or, when it has none (chunked), as soon as the bytes streamed in pass the limit.
Every refusal is the service's JSON error (`{"error": {"type", "message", "parameter"}}`).
"""

from __future__ import annotations

import hmac
import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Paths anyone may read: the liveness probe, the API's own description, and the page (which asks for the token).
PUBLIC_PATHS = frozenset(
    {"/v1/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc", "/", "/favicon.ico"}
)
PUBLIC_PREFIXES = ("/static/",)


def error_body(kind: str, message: str, parameter: str | None = None) -> bytes:
    return json.dumps({"error": {"type": kind, "message": message, "parameter": parameter}}).encode()


async def send_error(
    send: Send, status: int, kind: str, message: str, parameter: str | None = None, headers: list | None = None
) -> None:
    body = error_body(kind, message, parameter)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value
    return None


class BearerToken:
    """With a token, every request but `PUBLIC_PATHS` carries `Authorization: Bearer <token>`:
    401 without one, 403 with a wrong one (compared in constant time)."""

    def __init__(self, app: ASGIApp, token: str | None):
        self.app = app
        self.token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is None or scope["type"] not in ("http", "websocket") or self._public(scope["path"]):
            return await self.app(scope, receive, send)
        given = _header(scope, b"authorization")
        scheme, _, credential = (given or b"").partition(b" ")
        if given is None or scheme.lower() != b"bearer" or not credential.strip():
            return await send_error(
                send,
                401,
                "unauthorized",
                "this service needs a token: send `Authorization: Bearer <token>` (the KGDB_SERVE_TOKEN it was started with)",
                "Authorization",
                [(b"www-authenticate", b'Bearer realm="kgdb"')],
            )
        if not hmac.compare_digest(credential.strip(), self.token):
            return await send_error(send, 403, "forbidden", "the bearer token is not this service's", "Authorization")
        return await self.app(scope, receive, send)

    @staticmethod
    def _public(path: str) -> bool:
        return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


class BodyTooLarge(HTTPException):
    """Raised while the body streams in; FastAPI lets an HTTPException through as it is (413)."""

    def __init__(self, limit: int):
        super().__init__(413, detail=too_large_message(limit))


def too_large_message(limit: int) -> str:
    return (
        f"the request body is larger than this service's limit of {limit:,} bytes (--max-body-bytes): "
        "send a shorter question or fewer topics"
    )


class BodyLimit:
    """Refuse request bodies above `limit` bytes with 413, before they are read whole."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = _header(scope, b"content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                return await send_error(
                    send, 400, "bad_request", "Content-Length is not a number of bytes", "Content-Length"
                )
            if int(declared) > self.limit:
                return await send_error(send, 413, "body_too_large", too_large_message(self.limit), "body")
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        await self.app(scope, counted, send)
