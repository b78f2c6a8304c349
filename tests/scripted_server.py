"""A real OpenAI-compatible HTTP server for offline tests, answering from per-test scripts.

The server runs aiohttp in a background thread with its own event loop, so it works both from
plain tests and from tests that run inside an asyncio event loop (pytest-asyncio). It binds
127.0.0.1 on a random free port; ``server.base_url`` is ``http://127.0.0.1:<port>/v1``.

Endpoints:
    * ``POST /v1/chat/completions``: JSON answer, or Server-Sent Events when ``"stream": true``.
    * ``POST /v1/embeddings``: deterministic hashed bag-of-words vectors (see :func:`hashed_bow`),
      ``encoding_format`` ``"float"`` or ``"base64"`` (the openai client asks for base64 when the
      caller does not choose), ``dimensions`` honoured, else ``server.dim``.
    * ``GET /v1/models``.

Scripting (chat only): ``server.script(match, reply, delay=..., status=..., times=...)`` adds a
:class:`Rule`; the first rule that matches (and still has uses left) answers, otherwise
``server.default_responder`` does (by default :func:`tests.scripted_responder.lightrag_responder`,
which speaks LightRAG 1.5.7's extraction, summary and keyword formats). ``server.delay`` is added
to every chat answer. Every request is recorded in ``server.requests``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import inspect
import json
import logging
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Union

import numpy as np
from aiohttp import web

from tests.scripted_responder import lightrag_responder, messages_text

logger = logging.getLogger(__name__)

CHAT_PATH = "/v1/chat/completions"
EMBED_PATH = "/v1/embeddings"
MODELS_PATH = "/v1/models"

#: A deterministic answer no parser should accept (not JSON, broken delimiters).
GARBAGE = "}}{{ lorem ipsum <|#|><|#|> not-json ]][[ \u00bf?"

Matcher = Union[str, "re.Pattern[str]", Callable[[dict], bool], None]
Reply = Union[str, Callable[[dict], Any], None]

_WORD_RE = re.compile(r"\w+", re.UNICODE)


def hashed_bow(text: str, dim: int) -> np.ndarray:
    """Embed ``text`` as an L2-normalised hashed bag of lower-cased words.

    Each word's md5 picks a bucket (``int(md5) % dim``) and a sign (one bit of the digest).
    Text without words maps to the unit vector ``e_0`` so the result is never NaN.
    """
    vec = np.zeros(dim, dtype=np.float64)
    for word in _WORD_RE.findall(text.lower()):
        digest = int(hashlib.md5(word.encode("utf-8")).hexdigest(), 16)
        vec[digest % dim] += 1.0 if (digest >> 64) & 1 else -1.0
    norm = np.linalg.norm(vec)
    if norm == 0.0:
        vec[0] = 1.0
        return vec.astype(np.float32)
    return (vec / norm).astype(np.float32)


def _matches(match: Matcher, body: dict) -> bool:
    """True if ``match`` accepts the request ``body``.

    ``None`` matches everything, a string is a substring test and a compiled pattern a
    ``search`` over :func:`messages_text`, a callable is a predicate on the JSON body.
    """
    if match is None:
        return True
    if isinstance(match, str):
        return match in messages_text(body)
    if isinstance(match, re.Pattern):
        return match.search(messages_text(body)) is not None
    return bool(match(body))


@dataclass
class Rule:
    """One scripted answer: when ``match`` accepts a chat request, answer ``reply``.

    ``reply`` is a string or a callable ``(request_json) -> str`` (may be async); ``None`` means
    "answer with the default responder" (useful to add latency only). ``status`` != 200 returns
    an OpenAI-style error body with that HTTP status. ``times`` limits how often the rule fires
    (``None`` = always). ``delay`` (seconds) is slept before answering.
    """

    match: Matcher = None
    reply: Reply = None
    delay: float = 0.0
    status: int = 200
    times: int | None = None
    hits: int = 0
    raw_body: str | None = None  # sent as the HTTP 200 body instead of a completion (broken or odd payloads)

    def accepts(self, body: dict) -> bool:
        """True if the rule still has uses left and matches ``body``."""
        if self.times is not None and self.hits >= self.times:
            return False
        return _matches(self.match, body)


@dataclass
class RecordedRequest:
    """A request as the server saw it; ``t_start``/``t_end`` are ``time.perf_counter()``."""

    path: str
    body: dict
    time: float
    t_start: float
    t_end: float | None = None
    status: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        """All message contents joined by newlines (chat) or the inputs (embeddings)."""
        if self.path == EMBED_PATH:
            inp = self.body.get("input", [])
            return "\n".join(inp) if isinstance(inp, list) else str(inp)
        return messages_text(self.body)


class ScriptedServer:
    """OpenAI-compatible server in a background thread; see the module docstring."""

    def __init__(self, dim: int = 64, delay: float = 0.0, model: str = "scripted"):
        self.dim = dim
        self.delay = delay
        self.model = model
        self.rules: list[Rule] = []
        self.requests: list[RecordedRequest] = []
        self.default_responder: Callable[[dict], str] = lightrag_responder
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, the value for openai's ``base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "ScriptedServer":
        """Bind a free port and serve in a daemon thread; returns ``self``."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, args=(sock, ready), name=f"scripted-server-{self.port}", daemon=True
        )
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("scripted server did not start within 10 s")
        logger.debug("scripted server listening on %s", self.base_url)
        return self

    def _serve(self, sock: socket.socket, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._runner = web.AppRunner(self._make_app(), access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        self._loop.run_until_complete(web.SockSite(self._runner, sock).start())
        ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    def stop(self) -> None:
        """Stop serving and join the thread (idempotent)."""
        if self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._thread = None

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post(CHAT_PATH, self._handle_chat)
        app.router.add_post(EMBED_PATH, self._handle_embeddings)
        app.router.add_get(MODELS_PATH, self._handle_models)
        return app

    # ------------------------------------------------------------------ scripting
    def script(
        self,
        match: Matcher | Rule = None,
        reply: Reply = None,
        *,
        delay: float = 0.0,
        status: int = 200,
        times: int | None = None,
    ) -> Rule:
        """Add a rule (or a ready :class:`Rule`) after the existing ones and return it."""
        rule = match if isinstance(match, Rule) else Rule(match, reply, delay, status, times)
        with self._lock:
            self.rules.append(rule)
        return rule

    def error(self, match: Matcher = None, status: int = 500, times: int | None = None) -> Rule:
        """Answer matching chat requests with HTTP ``status`` (500: openai ``InternalServerError``)."""
        return self.script(match, f"scripted HTTP {status}", status=status, times=times)

    def raw(self, body: str, match: Matcher = None, times: int | None = None) -> Rule:
        """Answer matching chat requests with ``body`` verbatim (HTTP 200, JSON content type): e.g. a completion
        with empty ``choices``, or a body that is not JSON at all."""
        return self.script(Rule(match, None, 0.0, 200, times, raw_body=body))

    def garbage(self, match: Matcher = None, times: int | None = None) -> Rule:
        """Answer matching chat requests with :data:`GARBAGE` (HTTP 200)."""
        return self.script(match, GARBAGE, times=times)

    def reset(self) -> None:
        """Forget rules, recorded requests, global delay and the concurrency peak."""
        with self._lock:
            self.rules.clear()
            self.requests.clear()
            self.delay = 0.0
            self.max_in_flight = 0
            self.default_responder = lightrag_responder

    # ------------------------------------------------------------------ inspection
    def chat_requests(self) -> list[RecordedRequest]:
        """Recorded ``/v1/chat/completions`` requests, oldest first."""
        with self._lock:
            return [r for r in self.requests if r.path == CHAT_PATH]

    def embedding_requests(self) -> list[RecordedRequest]:
        """Recorded ``/v1/embeddings`` requests, oldest first."""
        with self._lock:
            return [r for r in self.requests if r.path == EMBED_PATH]

    def count(self, pred: Matcher = None, path: str = CHAT_PATH) -> int:
        """Number of recorded requests on ``path`` whose body ``pred`` accepts (rule semantics)."""
        with self._lock:
            recorded = [r for r in self.requests if r.path == path]
        return sum(1 for r in recorded if _matches(pred, r.body))

    # ------------------------------------------------------------------ handlers
    def _record(self, path: str, body: dict) -> RecordedRequest:
        rec = RecordedRequest(path=path, body=body, time=time.time(), t_start=time.perf_counter())
        with self._lock:
            self.requests.append(rec)
        return rec

    def _pick_rule(self, body: dict) -> Rule | None:
        with self._lock:
            for rule in self.rules:
                if rule.accepts(body):
                    rule.hits += 1
                    return rule
        return None

    async def _answer_text(self, rule: Rule | None, body: dict) -> str:
        reply = rule.reply if rule is not None and rule.reply is not None else self.default_responder
        text = reply(body) if callable(reply) else reply
        if inspect.isawaitable(text):
            text = await text
        return str(text)

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        body = await _read_json(request)
        rec = self._record(CHAT_PATH, body)
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            return await self._chat_response(request, body, rec)
        finally:
            with self._lock:
                self._in_flight -= 1
            rec.t_end = time.perf_counter()

    async def _chat_response(
        self, request: web.Request, body: dict, rec: RecordedRequest
    ) -> web.StreamResponse:
        rule = self._pick_rule(body)
        wait = self.delay + (rule.delay if rule else 0.0)
        if wait > 0:
            await asyncio.sleep(wait)
        if rule is not None and rule.status != 200:
            rec.status = rule.status
            return _error_response(rule.status, str(rule.reply or "scripted error"))
        if rule is not None and rule.raw_body is not None:
            rec.status = 200
            return web.Response(text=rule.raw_body, content_type="application/json")
        try:
            text = await self._answer_text(rule, body)
        except Exception as exc:  # a broken test script must surface, not hang the client
            logger.exception("scripted responder failed")
            rec.status = 500
            return _error_response(500, f"responder raised {exc!r}")
        rec.status = 200
        rec.extra["answer"] = text
        model = body.get("model", self.model)
        if body.get("stream"):
            return await _stream_response(request, text, model)
        return web.json_response(_completion_payload(text, model, body))

    async def _handle_embeddings(self, request: web.Request) -> web.Response:
        body = await _read_json(request)
        rec = self._record(EMBED_PATH, body)
        inputs = body.get("input", [])
        if isinstance(inputs, str):
            inputs = [inputs]
        dim = int(body.get("dimensions") or self.dim)
        fmt = body.get("encoding_format") or "float"
        data = [
            {"object": "embedding", "index": i, "embedding": _encode_vector(hashed_bow(str(t), dim), fmt)}
            for i, t in enumerate(inputs)
        ]
        n_tokens = sum(len(_WORD_RE.findall(str(t))) for t in inputs)
        rec.status, rec.t_end = 200, time.perf_counter()
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", self.model),
                "usage": {"prompt_tokens": n_tokens, "total_tokens": n_tokens},
            }
        )

    async def _handle_models(self, request: web.Request) -> web.Response:
        self._record(MODELS_PATH, {})
        return web.json_response(
            {"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "tests"}]}
        )


async def _read_json(request: web.Request) -> dict:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return body if isinstance(body, dict) else {"_raw": body}


def _encode_vector(vec: np.ndarray, fmt: str) -> list[float] | str:
    """``float`` → list of floats; ``base64`` → base64 of little-endian float32 bytes."""
    if fmt == "base64":
        return base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii")
    return [float(x) for x in vec]


def _usage(body: dict, text: str) -> dict:
    prompt_tokens = len(_WORD_RE.findall(messages_text(body)))
    completion_tokens = len(_WORD_RE.findall(text))
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _completion_payload(text: str, model: str, body: dict) -> dict:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": _usage(body, text),
    }


def _chunk_payload(cid: str, model: str, delta: dict, finish: str | None) -> bytes:
    payload = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(payload)}\n\n".encode("utf-8")


def stream_pieces(text: str) -> list[str]:
    """Split ``text`` into word-sized pieces (whitespace kept) whose concatenation is ``text``."""
    return re.findall(r"\S+\s*|\s+", text) or [""]


async def _stream_response(request: web.Request, text: str, model: str) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await resp.prepare(request)
    cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
    await resp.write(_chunk_payload(cid, model, {"role": "assistant", "content": ""}, None))
    for piece in stream_pieces(text):
        await resp.write(_chunk_payload(cid, model, {"content": piece}, None))
    await resp.write(_chunk_payload(cid, model, {}, "stop"))
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


def _error_response(status: int, message: str) -> web.Response:
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return web.json_response(
        {"error": {"message": message, "type": kind, "param": None, "code": None}}, status=status
    )
