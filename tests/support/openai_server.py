"""A small, real HTTP server speaking the OpenAI chat-completions protocol, for tests and demos.

Standard library only; listens on loopback; one thread per request (bounded); replies are
scripted. Each scripted step is a dict:
- `{"content": "ans: Paris"}`: a normal completion (usage: whitespace-token counts);
- `{"status": 429}` / `{"status": 500}` / `{"status": 401}` ...: an OpenAI-style error body; a 429 or
  5xx carries `retry-after-ms` (default 10 ms, `{"retry_after_ms": N}` to change it), the header real
  endpoints send and the openai client honours;
- `{"delay": 2.0, ...}`: wait before answering (to trigger client timeouts);
- `{"raw": "not json"}`: a body that is not a chat completion;
- `{"dribble": 1.0, ...}`: the whole response (status line, headers, body) one byte per second, so
  that no single socket read ever waits long; `"headers_first": True` sends the headers at once and
  dribbles the body only;
- `{"silent": True}`: reads the request and never answers, until the client hangs up or the server stops.
When the script runs out, `responder(messages) -> str` answers (default: "ans: not available").

What the server says about itself, like a local llama.cpp server (all optional):
- `structured="json"`: honours `response_format` json_schema: the reply is `{"answers": [...]}` with
  the names of the schema's enum that the responder's `ans:` lines give; `"reject"`: a 400 naming
  response_format, as servers without structured output answer; `"ignore"` (default): prose anyway;
- `structured="llama-cpp-python"`: that server's dialect: `{"type": "json_object", "schema": ...}` is
  honoured, the `json_schema` type is refused with its 422, and `/extras/tokenize` counts tokens;
- `context=N`: `/props` reports N tokens (and `slots`), `/tokenize` counts whitespace tokens, and a
  request whose prompt plus max_tokens exceeds N gets llama-cpp-python's 400 ("exceed context window
  of N"); `report_context=False` keeps N to itself (learnt from the 400 only).

    with OpenAIServer(script=[{"status": 429}, {"content": "ans: Paris"}]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test")

Run as a script (`python tests/support/openai_server.py --port 8999`) to point `kgdb` at it by hand.
"""

from __future__ import annotations

import json
import os
import re
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_BODY = 8 * 1024 * 1024
MAX_THREADS = 16


def _count_tokens(text: str) -> int:
    return len(text.split())


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send(
        self, status: int, body: bytes, content_type: str = "application/json", headers: dict | None = None
    ) -> None:
        if self._dribble:
            self._send_dribbled(status, body, content_type, headers)
            return
        try:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass

    _dribble: float = 0.0
    _headers_first = False

    def _send_dribbled(self, status: int, body: bytes, content_type: str, headers: dict | None) -> None:
        head = [f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}"]
        head += [f"{k}: {v}" for k, v in {**(headers or {}), "Content-Type": content_type}.items()]
        head += [f"Content-Length: {len(body)}", "", ""]
        data = "\r\n".join(head).encode() + body
        start = len(data) - len(body) if self._headers_first else 0
        try:
            self.wfile.write(data[:start])
            self.wfile.flush()
            for i in range(start, len(data)):
                if self.server.owner._stopping.wait(self._dribble):
                    break
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
        except OSError:  # the client hung up: what a deadline should make it do
            pass
        self.close_connection = True

    def _stay_silent(self) -> None:
        """Hold the request unanswered until the client hangs up (EOF on the socket) or the server stops."""
        while not self.server.owner._stopping.is_set():
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable and not self.connection.recv(1, socket.MSG_PEEK):
                break
        self.close_connection = True

    def do_GET(self) -> None:
        owner = self.server.owner
        if self.path.rstrip("/") == "/props" and owner.context and owner.report_context:
            body = {"default_generation_settings": {"n_ctx": owner.context}, "total_slots": owner.slots}
            self._send(200, json.dumps(body).encode())
        elif self.path.rstrip("/").endswith("/models"):
            body = {
                "object": "list",
                "data": [{"id": self.server.owner.model, "object": "model", "owned_by": "kgdb-test"}],
            }
            self._send(200, json.dumps(body).encode())
        else:
            self._send(404, json.dumps({"error": {"message": "not found", "type": "invalid_request_error"}}).encode())

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(413, b'{"error": {"message": "request too large"}}')
            return
        raw = self.rfile.read(length)
        owner = self.server.owner
        if self.path.rstrip("/") == "/extras/tokenize" and owner.structured == "llama-cpp-python":
            try:
                text = json.loads(raw).get("input", "")
            except (json.JSONDecodeError, AttributeError):
                text = ""
            self._send(200, json.dumps({"tokens": list(range(_count_tokens(text)))}).encode())
            return
        if self.path.rstrip("/") == "/tokenize" and owner.context and owner.report_context:
            try:
                text = json.loads(raw).get("content", "")
            except (json.JSONDecodeError, AttributeError):
                text = ""
            self._send(200, json.dumps({"tokens": list(range(_count_tokens(text)))}).encode())
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(
                404,
                json.dumps({"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}}).encode(),
            )
            return
        try:
            request = json.loads(raw)
        except json.JSONDecodeError:
            self._send(400, b'{"error": {"message": "body is not JSON"}}')
            return
        asked_format = request.get("response_format") or {}
        wants_schema = asked_format.get("type") == "json_schema" or "schema" in asked_format
        if owner.structured == "llama-cpp-python" and asked_format.get("type") == "json_schema":
            detail = [{"loc": ["body", "response_format", "type"], "msg": "Input should be 'text' or 'json_object'"}]
            with owner._lock:
                owner.rejected.append(request)
            self._send(422, json.dumps({"detail": detail}).encode())
            return
        if wants_schema and owner.structured == "reject":
            with owner._lock:
                owner.rejected.append(request)
            self._send(
                400,
                json.dumps(
                    {"error": {"message": "response_format is not supported", "type": "invalid_request_error"}}
                ).encode(),
            )
            return
        if owner.context:
            asked = sum(_count_tokens(m.get("content") or "") + 8 for m in request.get("messages", [])) + int(
                request.get("max_tokens") or 0
            )
            if asked > owner.context:
                with owner._lock:
                    owner.rejected.append(request)
                message = f"Requested tokens ({asked}) exceed context window of {owner.context}"
                self._send(400, json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode())
                return
        step = owner._next_step(request)
        if step.get("silent"):
            self._stay_silent()
            return
        self._dribble, self._headers_first = float(step.get("dribble") or 0), bool(step.get("headers_first"))
        if step.get("delay"):
            time.sleep(float(step["delay"]))
        if "raw" in step:
            self._send(int(step.get("status", 200)), str(step["raw"]).encode())
            return
        status = int(step.get("status", 200))
        if status != 200:
            message = step.get("message", f"scripted error {status}")
            body = {"error": {"message": message, "type": "scripted", "code": status}}
            retry = {"retry-after-ms": str(step.get("retry_after_ms", 10))} if status == 429 or status >= 500 else None
            self._send(status, json.dumps(body).encode(), headers=retry)
            return
        content = step["content"]
        if wants_schema and owner.structured in ("json", "llama-cpp-python") and not content.lstrip().startswith("{"):
            content = _as_json(content, request["response_format"])
        prompt_tokens = sum(_count_tokens(m.get("content") or "") for m in request.get("messages", []))
        body = {
            "id": f"chatcmpl-{owner.calls}",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model", owner.model),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": _count_tokens(content),
                "total_tokens": prompt_tokens + _count_tokens(content),
            },
        }
        self._send(200, json.dumps(body).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: OpenAIServer

    def process_request(self, request: Any, client_address: Any) -> None:
        # Bound concurrency: at most MAX_THREADS requests are handled at once.
        self.owner._slots.acquire()
        try:
            super().process_request(request, client_address)
        except Exception:
            self.owner._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.owner._slots.release()


class OpenAIServer:
    def __init__(
        self,
        script: Iterable[dict[str, Any]] = (),
        responder: Callable[[list[dict[str, Any]]], str] | None = None,
        model: str = "kgdb-test-model",
        port: int = 0,
        structured: str = "ignore",
        context: int | None = None,
        slots: int = 1,
        report_context: bool = True,
    ):
        self.script: deque[dict[str, Any]] = deque(script)
        self.responder = responder or (lambda messages: "ans: not available")
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []  # requests answered 400 (schema or context)
        self.calls = 0
        self.structured, self.context, self.slots, self.report_context = structured, context, slots, report_context
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # ends dribbling and silent replies when the server stops
        self._slots = threading.BoundedSemaphore(MAX_THREADS)
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.owner = self
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def _next_step(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.calls += 1
            self.requests.append(request)
            if self.script:
                return dict(self.script.popleft())
        return {"content": self.responder(request.get("messages", []))}

    def push(self, *steps: dict[str, Any]) -> None:
        with self._lock:
            self.script.extend(steps)

    def start(self) -> OpenAIServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _as_json(content: str, response_format: dict[str, Any]) -> str:
    """A prose reply as the JSON object a schema-constrained server would give: the `ans:` answers
    that are among the schema's enum names (a grammar admits nothing else)."""
    schema = response_format.get("json_schema", {}).get("schema") or response_format.get("schema") or {}
    listed = schema.get("properties", {}).get("answers", {})
    allowed = listed.get("items", {}).get("enum")
    answers = [
        line.split(":", 1)[1].strip() for line in content.splitlines() if line.strip().lower().startswith("ans:")
    ]
    answers = [a for a in answers if allowed is None or a in allowed]
    if len(answers) < listed.get("minItems", 0) and allowed:  # a grammar must emit some enum name
        answers += [a for a in allowed if a not in answers][: listed["minItems"] - len(answers)]
    return json.dumps({"answers": answers})


def echo_first_evidence(messages: list[dict[str, Any]]) -> str:
    """A deterministic stand-in LLM: answers with the tail of the first evidence triple/chain line."""
    user = messages[-1].get("content", "") if messages else ""
    lines = user.splitlines()
    for line in lines[1:]:
        line = line.strip()
        if line.startswith("(") and line.endswith(")"):
            return "The first triple answers it.\nans: " + line[1:-1].rsplit(",", 1)[-1]
        if "→" in line:
            return "The first chain answers it.\nans: " + line.rsplit("→", 1)[-1].split(";")[0].strip()
    return "ans: not available"


_PATH_LINE = re.compile(r"^Path (\d+)\. (.*)$")
_MORE = re.compile(r" \(\+\d+ more [^)]*\)$")


def select_label_paths(messages: list[dict[str, Any]]) -> str:
    """A deterministic stand-in for `kgdb label`'s annotator. Reads the numbered `Path N. a → r → b`
    lines of the last user turn; when the prompt states `Answer(s):` (reg), selects the paths that
    end at a stated answer; otherwise (rapl) the paths with the fewest relations. Replies with an
    explanation line and one `ans: Path N` line per selection (`ans: none` when nothing fits)."""
    user = messages[-1].get("content", "") if messages else ""
    paths: list[tuple[int, str]] = []
    answers: set[str] = set()
    for line in user.splitlines():
        if m := _PATH_LINE.match(line.strip()):
            paths.append((int(m.group(1)), _MORE.sub("", m.group(2))))
        elif line.startswith("Answer(s):"):
            answers = {a.strip() for a in line.split(":", 1)[1].split(",") if a.strip()}
    if not paths:
        return "I see no paths.\nans: none"

    def hops(text: str) -> int:
        return (text.count("→") + text.count("←")) // 2

    def end(text: str) -> str:
        return re.split(r" [→←] ", text)[-1].strip()

    if answers:
        chosen = [n for n, text in paths if end(text) in answers]
        why = "these paths end at a stated answer"
    else:
        fewest = min(hops(text) for _, text in paths)
        chosen = [n for n, text in paths if hops(text) == fewest]
        why = f"these paths reach the answer in the fewest steps ({fewest})"
    if not chosen:
        return "No path fits.\nans: none"
    return why.capitalize() + ".\n" + "\n".join(f"ans: Path {n}" for n in chosen)


_RELATION_LINE = re.compile(r"^([→←]) (\S.*)$")


def select_relations(messages: list[dict[str, Any]]) -> str:
    """A deterministic stand-in for relation targeting (`kgdb label --method rapl-relations`). Reads
    the `→ relation` / `← relation` lines of the last user turn and selects those whose last name
    segment shares a word of 4+ letters with the question (`capital` in location.country.capital),
    else the first listed relation. Replies with an explanation and one `ans: → relation` line each."""
    user = messages[-1].get("content", "") if messages else ""
    listed = [
        (m.group(1), m.group(2).strip()) for line in user.splitlines() if (m := _RELATION_LINE.match(line.strip()))
    ]
    if not listed:
        return "I see no relations.\nans: none"
    question = user.rsplit("Question:", 1)[-1].lower()
    words = {w for w in re.findall(r"[a-z]+", question) if len(w) >= 4}

    def fits(name: str) -> bool:
        return any(
            w in part or part in w
            for part in re.split(r"[._]", name.rsplit(".", 1)[-1].lower())
            if len(part) >= 4
            for w in words
        )

    chosen = [(a, n) for a, n in listed if fits(n)] or listed[:1]
    return "These relations match the question's words.\n" + "\n".join(f"ans: {a} {n}" for a, n in chosen)


_AROUND = "Relations around the topic entities:"


def plan_listed_relations(messages: list[dict[str, Any]]) -> str:
    """A deterministic stand-in for the LLM relation-path planner (`--planner llm`): each relation
    listed under `Relations around the topic entities:` in the last user turn, as a 1-hop path,
    in the listed order (`I see no relations.` when none are listed)."""
    user = messages[-1].get("content", "") if messages else ""
    listed = user.split(_AROUND, 1)[-1].split("Question:", 1)[0] if _AROUND in user else ""
    relations = [line.strip() for line in listed.splitlines() if line.strip() and line.strip() != "(none)"]
    return "\n".join(relations) if relations else "I see no relations."


def scripted_llm(messages: list[dict[str, Any]]) -> str:
    """The command-line server's responder: label selection prompts (numbered `Path N.` lines) get
    `select_label_paths`, relation-targeting prompts (`→ relation` lines) `select_relations`,
    relation-path planning prompts `plan_listed_relations`, question-answering prompts `echo_first_evidence`."""
    user = messages[-1].get("content", "") if messages else ""
    if _AROUND in user:
        return plan_listed_relations(messages)
    if any(_PATH_LINE.match(line.strip()) for line in user.splitlines()):
        return select_label_paths(messages)
    if "Relations with the entity:" in user:
        return select_relations(messages)
    return echo_first_evidence(messages)


def crashing(
    responder: Callable[[list[dict[str, Any]]], str], log: str | None = None, exit_after: int | None = None
) -> Callable[[list[dict[str, Any]]], str]:
    """`responder`, appending each prompt's last message to `log` (one JSON string a line) and, once it has
    answered `exit_after` requests, ending the whole process on the next one before it replies: the server
    dies with a request in flight, as a crashed or killed LLM server does."""
    lock = threading.Lock()
    answered = [0]

    def respond(messages: list[dict[str, Any]]) -> str:
        with lock:
            if exit_after is not None and answered[0] >= exit_after:
                os._exit(1)
            answered[0] += 1
            if log:
                with open(log, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(messages[-1].get("content", "") if messages else "") + "\n")
        return responder(messages)

    return respond


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(
        description="Scripted OpenAI-compatible server (answers with the first evidence line; selects label paths by a fixed rule)."
    )
    parser.add_argument("--port", type=int, default=8999)
    parser.add_argument("--log", help="append each prompt's last message to this file (one JSON string a line)")
    parser.add_argument("--exit-after", type=int, help="answer this many completions, then die on the next one")
    args = parser.parse_args()
    server = OpenAIServer(responder=crashing(scripted_llm, args.log, args.exit_after), port=args.port).start()
    print(f"serving {server.base_url} (Ctrl-C to stop)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
