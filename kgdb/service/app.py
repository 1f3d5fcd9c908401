"""The HTTP API of `kgdb serve`: one warm `kgdb.api.Kgdb` answering under `/v1`.

Every route validates its request with a pydantic model (`kgdb.service.schemas`), runs the kgdb call
on a worker thread (never on the event loop; at most `options.workers` at once) under the
per-request deadline, and answers JSON. Errors are one JSON shape, `{"error": {"type", "message",
"parameter"}}`: 422 for bad input (naming the parameter), 404 for an unknown run or entity, 401/403
for the token, 413 for an oversize body, 403 for a write to a read-only service, 503 when Neo4j is
unavailable or the graph is empty, 504 at the deadline. A response larger than
`options.max_response_bytes` is refused (422, naming the parameter that sizes it) rather than cut.
"""

from __future__ import annotations

import logging
from typing import Any, Callable
from urllib.parse import quote, urlsplit

import anyio
from fastapi import APIRouter, FastAPI, Path, Query
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.requests import Request

from kgdb import __version__
from kgdb.api import Kgdb, UnknownEntityError
from kgdb.errors import DatabaseError, InputError, KgdbError, TransactionMemoryError
from kgdb.server_home import browser_link
from kgdb.service import page
from kgdb.service.evidence_graph import evidence_graph
from kgdb.service.guards import BearerToken, BodyLimit, error_body
from kgdb.service.mcp_server import mount_mcp
from kgdb.service.options import ServiceOptions
from kgdb.service.schemas import (
    MAX_NAME_CHARS,
    MAX_RUNS,
    AskRequest,
    AskResponse,
    ErrorBody,
    ExplainRequest,
    HealthResponse,
    LinkRequest,
    LinkResponse,
    PathOut,
    PathsRequest,
    PathsResponse,
    PathStep,
    PlanResponse,
    ReadyResponse,
    RetrieveRequest,
    RetrieveResponse,
    RunResponse,
    RunsResponse,
)

log = logging.getLogger(__name__)

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": why}
    for status, why in {
        401: "no bearer token (the service has one)",
        403: "a wrong bearer token, or a write asked of a read-only service",
        413: "the request body is over the limit",
        422: "bad input (the parameter is named), or a response over the size limit",
        503: "Neo4j is unavailable",
        504: "the request ran past the deadline",
    }.items()
}
_KINDS = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    415: "unsupported_media_type",
}


class ServiceError(HTTPException):
    """An HTTP error with the service's type and parameter (raised by routes, rendered by `_http_error`)."""

    def __init__(self, status: int, kind: str, message: str, parameter: str | None = None):
        super().__init__(status, detail=message)
        self.kind, self.parameter = kind, parameter


def create_app(kg: Kgdb, options: ServiceOptions) -> FastAPI:
    """The service for `kg` (built once, shared by every request) with `options`' limits."""
    app = FastAPI(
        title="kgdb",
        version=__version__,
        summary="Question answering over a knowledge graph in Neo4j, with the evidence of every answer.",
        responses=ERRORS,
    )
    app.state.kg, app.state.options = kg, options
    limiter = anyio.CapacityLimiter(options.workers)

    async def run(fn: Callable[[], bytes]) -> Response:
        """`fn` on a worker thread under the deadline (the wait for a free worker counts too). A call past
        the deadline is answered 504 at once; its thread finishes in the background."""
        with anyio.move_on_after(options.deadline_s) as scope:
            body = await anyio.to_thread.run_sync(fn, abandon_on_cancel=True, limiter=limiter)
        if scope.cancelled_caught:
            raise ServiceError(
                504,
                "deadline",
                f"no answer within this service's deadline of {options.deadline_s:g} s (--deadline); "
                "the work started goes on in the background",
            )
        return Response(body, media_type="application/json")

    def sized(model: BaseModel, parameter: str | None) -> bytes:
        body = model.model_dump_json().encode()
        if len(body) > options.max_response_bytes:
            raise ServiceError(
                422,
                "response_too_large",
                f"the answer is {len(body):,} bytes, above this service's limit of {options.max_response_bytes:,} "
                f"(--max-response-bytes)" + (f": ask for less with a smaller {parameter}" if parameter else ""),
                parameter,
            )
        return body

    def write_for(asked: bool | None) -> bool:
        if options.read_only and asked:
            raise ServiceError(403, "read_only", "this service is read-only (--read-only): it writes no runs", "write")
        return not options.read_only if asked is None else asked

    v1 = APIRouter(prefix="/v1")

    @v1.post("/ask", response_model=AskResponse)
    async def ask(body: AskRequest) -> Response:
        """Answer a question from the graph, with the evidence of each answer (`kgdb ask --json`'s fields)."""
        write = write_for(body.write)

        def work() -> bytes:
            res = kg.ask(
                body.question,
                body.topics,
                retriever=body.retriever,
                reasoner=body.reasoner or "auto",
                k=body.k,
                write=write,
            )
            graph = evidence_graph(res, lambda names: _resolve_names(kg, names))
            out = AskResponse(
                **res.to_json(), graph=graph, browser_url=_browser_url(kg, res.browser_query) if res.run else None
            )
            return sized(out, "k")

        return await run(work)

    @v1.post("/retrieve", response_model=RetrieveResponse)
    async def retrieve(body: RetrieveRequest) -> Response:
        """Score the question's subgraph and keep the top-k triples (a run id when written back)."""
        write = write_for(body.write)

        def work() -> bytes:
            # the request's fields are `Kgdb.retrieve`'s arguments, by name
            r = kg.retrieve(**body.model_dump(exclude={"write"}), write=write)
            return sized(RetrieveResponse(**r.to_json()), "k")

        return await run(work)

    @v1.post("/link", response_model=LinkResponse)
    async def link(body: LinkRequest) -> Response:
        """The entities a text most likely names, best first, with their scores (`kgdb link`)."""

        def work() -> bytes:
            found = kg.link(body.text, k=body.k)
            return sized(LinkResponse(text=body.text, entities=found), "k")

        return await run(work)

    @v1.post("/paths", response_model=PathsResponse)
    async def paths(body: PathsRequest) -> Response:
        """Every shortest path between an entity and each target (`kgdb paths`)."""

        def work() -> bytes:
            found = kg.paths(body.source, body.targets, directed_only=body.directed_only)
            names = kg.names([x for p in found for _, h, _, t in p.triples for x in (h, t)])
            out = [
                PathOut(
                    source=p.topic,
                    target=p.answer,
                    direction=p.direction,
                    length=p.length,
                    triples=[
                        PathStep(head=h, head_name=names.get(h, h), relation=r, tail=t, tail_name=names.get(t, t))
                        for _, h, r, t in p.triples
                    ],
                )
                for p in found
            ]
            return sized(PathsResponse(source=body.source, targets=body.targets, paths=out), "targets")

        return await run(work)

    @v1.get("/runs", response_model=RunsResponse)
    async def runs(
        limit: int = Query(50, ge=1, le=MAX_RUNS, description="Most runs listed, newest first."),
        qid: str | None = Query(None, min_length=1, max_length=MAX_NAME_CHARS, description="Only this question's."),
    ) -> Response:
        """Runs written back to the graph, newest first (`kgdb runs list`)."""

        def work() -> bytes:
            return sized(RunsResponse(runs=kg.runs(qid=qid, limit=limit)), "limit")

        return await run(work)

    @v1.get("/runs/{run}", response_model=RunResponse)
    async def run_show(run_id: str = Path(alias="run", min_length=1, max_length=MAX_NAME_CHARS)) -> Response:
        """One run: its question, topics and scored triples by rank (`kgdb runs show`)."""

        def work() -> bytes:
            try:
                found = kg.read_run(run_id)
            except DatabaseError:
                raise
            except KgdbError as exc:
                raise ServiceError(404, "not_found", str(exc), "run") from None
            return sized(RunResponse(**found), None)

        return await run(work)

    @v1.post("/explain", response_model=PlanResponse)
    async def explain(body: ExplainRequest) -> Response:
        """Which retriever, checkpoint, reasoner and format would answer, and why; answers nothing."""

        def work() -> bytes:
            plan = kg.explain(
                retriever=body.retriever, checkpoint=body.checkpoint, reasoner=body.reasoner or "auto", fmt=body.fmt
            )
            return sized(PlanResponse(**plan.to_json()), None)

        return await run(work)

    @v1.get("/health", response_model=HealthResponse)
    async def health() -> HealthResponse:
        """The process is alive (asks nothing of Neo4j; needs no token)."""
        return HealthResponse(status="ok", version=__version__)

    @v1.get("/ready", response_model=ReadyResponse, responses={503: {"model": ErrorBody}})
    async def ready() -> Response:
        """Neo4j answers and the graph is loaded (503 otherwise)."""

        def work() -> bytes:
            from kgdb.cypher.schema import counts

            found = counts(kg.graph)
            if not found.get("entities"):
                raise ServiceError(503, "not_ready", "the graph is empty: load one with `kgdb load`")
            ready = ReadyResponse(
                status="ready",
                entities=found["entities"],
                triples=found.get("triples") or 0,
                read_only=options.read_only,
            )
            return sized(ready, None)

        return await run(work)

    app.include_router(v1)
    app.include_router(page.router)
    mount_mcp(app, kg, options)
    _add_error_handlers(app)
    app.add_middleware(BodyLimit, limit=options.max_body_bytes)
    app.add_middleware(BearerToken, token=options.token)  # outermost: refuses unread
    return app


def _resolve_names(kg: Kgdb, names: list[str]) -> dict[str, str]:
    from kgdb.cypher.linking import resolve_each

    return resolve_each(kg.graph, names)


def _browser_url(kg: Kgdb, query: str | None) -> str | None:
    """Neo4j Browser of kgdb's Neo4j (its HTTP port from the settings) with `query` in the editor."""
    if not query:
        return None
    s = kg.settings
    parts = urlsplit(s.neo4j_uri)
    host = parts.hostname or "localhost"
    link = browser_link(host, s.neo4j_http_port, parts.port or s.neo4j_bolt_port)
    return f"{link}&cmd=edit&arg={quote(query, safe='')}"


# ---- errors: one JSON shape, the status from the error's type ------------------------------------------
def _error(status: int, kind: str, message: str, parameter: str | None = None, headers=None) -> JSONResponse:
    return JSONResponse(
        {"error": {"type": kind, "message": message, "parameter": parameter}}, status_code=status, headers=headers
    )


def _parameter(loc: tuple | list) -> str | None:
    """A pydantic error location as the parameter's name: `("body", "topics", 0)` -> `topics[0]`."""
    parts = [p for p in loc if p not in ("body", "query", "path", "header")]
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or None


def _database_status(exc: DatabaseError) -> tuple[int, str]:
    """503 for a server that is gone or out of memory; 422 for a query the server refused for its input."""
    from neo4j.exceptions import ClientError

    if isinstance(exc.__cause__, ClientError) and not isinstance(exc, TransactionMemoryError):
        return 422, "query_refused"
    return 503, "database_unavailable"


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {}
        parameter = _parameter(first.get("loc", ()))
        message = "; ".join(f"{_parameter(e.get('loc', ())) or 'body'}: {e.get('msg', 'invalid')}" for e in errors)
        return _error(422, "validation", message or "invalid request", parameter)

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        if isinstance(exc, ServiceError):
            return _error(exc.status_code, exc.kind, str(exc.detail), exc.parameter)
        kind = _KINDS.get(exc.status_code, "http_error")
        parameter = "body" if exc.status_code == 413 else None
        return _error(exc.status_code, kind, str(exc.detail), parameter, getattr(exc, "headers", None))

    @app.exception_handler(UnknownEntityError)
    async def unknown_entity(_request: Request, exc: UnknownEntityError) -> JSONResponse:
        return _error(404, "not_found", str(exc), None if exc.path is None else str(exc.path))

    @app.exception_handler(InputError)
    async def bad_input(_request: Request, exc: InputError) -> JSONResponse:
        return _error(422, "invalid_input", str(exc), None if exc.path is None else str(exc.path))

    @app.exception_handler(DatabaseError)
    async def database(_request: Request, exc: DatabaseError) -> JSONResponse:
        status, kind = _database_status(exc)
        return _error(status, kind, str(exc))

    @app.exception_handler(KgdbError)
    async def kgdb_error(_request: Request, exc: KgdbError) -> JSONResponse:
        return _error(422, "kgdb_error", str(exc))

    @app.exception_handler(Exception)
    async def internal(_request: Request, exc: Exception) -> Response:
        log.exception("internal error", exc_info=exc)
        body = error_body("internal", f"an internal error ({type(exc).__name__}); the service's log has the details")
        return Response(body, status_code=500, media_type="application/json")
