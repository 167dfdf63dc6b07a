"""A fake OpenAI-compatible chat server on 127.0.0.1, for tests and performance runs.

`FakeOpenAI` serves `GET /v1/models` and `POST /v1/chat/completions` (plain JSON, or Server-Sent
Events when the body asks for `"stream": true`) from a thread, using only the standard library,
so the real HTTP path through the openai client runs without the internet.
The replies come from a plain function of the messages (`fake_players.answerer_for` builds one
that plays the answerer perfectly). A latency per call and injected faults (HTTP errors, hangs,
resets, malformed bodies, errors that echo the key) make it a test bed for the runner.

Every completion reports its `usage`, words standing in for tokens; `cached_prompts` adds the
cached tokens (`prompt_tokens_details`), and the `reasoning_models` it serves act as OpenAI's
reasoning models do: they refuse any temperature but 1 (HTTP 400, OpenAI's message) and report
reasoning tokens (`completion_tokens_details`), counted in the completion tokens.

    python -m privateshared.bench.testing.fake_endpoint --latency 0.1 --reasoning-model o-fake

serves perfect players (answerer, questioner, judge) for the default instances until stopped,
and prints its URL.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from privateshared.bench.testing.fake_players import ReplyFunction, default_players


@dataclass(frozen=True)
class Fault:
    """How the server misbehaves on one chat request."""

    kind: Literal["status", "hang", "reset", "malformed"]
    """status: an HTTP error; hang: never answer; reset: drop the connection; malformed: a 200
    whose body is not JSON."""
    status: int = 500
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra response headers for a status fault, e.g. {"Retry-After": "1"}."""
    echo_key: bool = False
    """For a status fault: the error message repeats the key the request was sent with (its
    Authorization header), as some providers do ("Incorrect API key provided: sk-..."), so a
    test can check that no key reaches the records or the output."""


FaultPlan = Callable[[int], "Fault | None"]
"""Chat request number (1 for the first) -> the fault to inject, if any."""


def past_the_check(plan: FaultPlan, checks: int = 1) -> FaultPlan:
    """`plan` for the calls of the episodes, numbered from 1 as before: the first `checks`
    chat requests (the check calls a run makes before its first episode, one per model and
    seat) are answered. Without it, a plan that fails every call stops the run at its check."""
    return lambda number: None if number <= checks else plan(number - checks)


class FakeOpenAI:
    """An OpenAI-compatible endpoint on 127.0.0.1 that answers with `reply(messages)`.

    Use it as a context manager: the server listens from `__enter__` and is gone after `__exit__`.

    Args:
        reply: Gives the text of each chat completion from the request's messages.
        models: Model names listed by `GET /v1/models`.
        delay: Seconds to wait before answering a chat completion (model listings answer at
            once, so a client's preflight check passes while its calls time out).
        reasoning_models: Model names (served besides `models`) that act as OpenAI's reasoning
            models: a request with a temperature other than 1 is refused with OpenAI's HTTP 400,
            and each reply reports reasoning tokens (the words of the last message, as if the
            model read it once more), counted in its completion tokens.
        cached_prompts: Report cached tokens too: the words of every message before the last,
            as a prompt cache holding the conversation so far would.
    """

    def __init__(
        self,
        reply: ReplyFunction,
        models: Sequence[str] = ("fake-model",),
        delay: float = 0.0,
        faults: Mapping[int, Fault] | FaultPlan | None = None,
        port: int = 0,
        owned_by: str = "fake",
        reasoning_models: Collection[str] = (),
        cached_prompts: bool = False,
    ) -> None:
        self.reply = reply
        self.reasoning_models = frozenset(reasoning_models)
        self.models = [*models, *(name for name in reasoning_models if name not in models)]
        self.cached_prompts = cached_prompts
        self.delay = delay
        self.faults: FaultPlan = (
            faults.get if isinstance(faults, Mapping) else faults or (lambda number: None)
        )
        self.port = port
        self.owned_by = owned_by
        """What `/v1/models` says owns its models: a real server's name (vllm, sglang, llamacpp,
        openai) makes it pass for one, e.g. for guided decoding (agents/guided.py)."""
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._served = 0
        self._in_flight = 0
        self.max_in_flight = 0
        """The most chat requests the server was handling at once."""
        # Set on exit: cuts delays short, so stopping never waits for a sleeping handler.
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """Where clients send requests, e.g. http://127.0.0.1:PORT/v1."""
        if self._server is None:
            raise RuntimeError("the fake server is not running; use it in a `with` block")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every chat request received so far, in arrival order (a copy).

        Each entry has `body` (the parsed JSON), `headers` (names lower-cased, as HTTP treats
        them), `completion_id` (the id the response carried), `reply` (the text sent back) and
        `refused` (True for a reasoning model's refusal of the temperature).
        """
        with self._lock:
            return list(self._requests)

    def __enter__(self) -> FakeOpenAI:
        self._server = _Server(("127.0.0.1", self.port), _Handler)
        self._server.fake = self
        # A short poll interval: shutdown() waits for the loop to look, 0.5 s by default.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stopping.set()
        assert self._server is not None and self._thread is not None
        self._server.stop()
        self._thread.join(timeout=5)

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        """Number the request, decide its fault or compute its reply, and keep both.

        The completion id is a digest of the request, not its arrival number: a run with
        deterministic players gets the same records whatever order its concurrent calls arrive
        in (the same request gets the same id, as it gets the same reply)."""
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
        completion_id = f"chatcmpl-fake-{digest}"
        with self._lock:
            self._served += 1
            number = self._served
        fault = self.faults(number)
        # OpenAI's reasoning models take no temperature but their default, 1.
        refused = body.get("model") in self.reasoning_models and body.get("temperature", 1) != 1
        silent = fault is not None or refused
        reply = "" if silent else self.reply(body.get("messages", []))
        text = reply if isinstance(reply, str) else str(reply.get("content") or "")
        calls = [] if isinstance(reply, str) else list(reply.get("tool_calls") or [])
        entry = {
            "body": body, "headers": headers, "completion_id": completion_id,
            "reply": text, "tool_calls": calls, "fault": fault, "refused": refused,
            "arrived": time.monotonic(),
        }  # fmt: skip
        with self._lock:
            self._requests.append(entry)
        return entry


class _Server(ThreadingHTTPServer):
    """One thread per connection, each tracked with its socket so that stopping can end them."""

    fake: FakeOpenAI
    # A whole run opens a hundred connections at once; the default backlog of 5 would refuse most.
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._handlers: list[threading.Thread] = []

    def process_request(self, request: Any, client_address: Any) -> None:
        # Daemon threads, so a stuck handler can never keep pytest from exiting; `stop` joins them.
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name="fake-openai-connection",
            daemon=True,
        )
        with self._lock:
            self._connections.add(request)
            self._handlers.append(thread)
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self._lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def stop(self) -> None:
        """Stop serving, close every connection and wait for the handler threads to end."""
        self.shutdown()
        with self._lock:
            connections = list(self._connections)
            handlers = list(self._handlers)
        # Handlers wait for the next request on idle keep-alive connections: wake them.
        for connection in connections:
            with contextlib.suppress(OSError):  # the client closed it already
                connection.shutdown(socket.SHUT_RDWR)
        self.server_close()
        for thread in handlers:
            thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps connections alive between calls, as real endpoints do for the openai client.
    protocol_version = "HTTP/1.1"
    # Headers and body leave in one segment: split writes meet the client's delayed ACK and
    # Nagle's algorithm, which would add 40 ms to every call.
    wbufsize = -1
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: pytest would show every request line on a failure."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            self._send_json(404, _error(f"no route {self.path}", "not_found"))
            return
        models = [
            {"id": name, "object": "model", "created": 0, "owned_by": self.server.fake.owned_by}
            for name in self.server.fake.models
        ]
        self._send_json(200, {"object": "list", "data": models})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, _error(f"no route {self.path}", "not_found"))
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError as error:
            self._send_json(400, _error(f"body is not JSON: {error}", "invalid_request_error"))
            return
        fake = self.server.fake
        with fake._lock:
            fake._in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake._in_flight)
        try:
            self._answer(fake, body)
        finally:
            with fake._lock:
                fake._in_flight -= 1

    def _answer(self, fake: FakeOpenAI, body: dict[str, Any]) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            # Recorded on arrival, so a test also sees the requests whose client gave up.
            entry = fake._record(body, headers)
        except Exception as error:  # a reply function that cannot answer: tell the test why
            self._send_json(500, _error(f"{type(error).__name__}: {error}", "server_error"))
            return
        if fake.delay and fake._stopping.wait(fake.delay):
            return  # stopping: the client gave up long ago
        if entry["fault"] is not None:
            self._misbehave(entry["fault"], headers)
            return
        if entry["refused"]:
            self._send_json(400, unsupported_temperature(body["temperature"]))
            return
        completion_id, text = entry["completion_id"], entry["reply"]
        model = body.get("model", "fake-model")
        usage = _usage(body.get("messages", []), text, model in fake.reasoning_models,
                       fake.cached_prompts)  # fmt: skip
        try:
            if body.get("stream"):
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                events = _chunks(completion_id, model, text, usage, include_usage,
                                 entry["tool_calls"])  # fmt: skip
                self._send_events(events)
            else:
                completion = _completion(completion_id, model, text, usage, entry["tool_calls"])
                self._send_json(200, completion)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and hung up; nothing left to tell it

    def _misbehave(self, fault: Fault, headers: Mapping[str, str]) -> None:
        """Answer as `fault` says; `headers` are the request's, names lower-cased."""
        if fault.kind == "status":
            message = f"injected fault {fault.status}"
            if fault.echo_key:
                key = headers.get("authorization", "").removeprefix("Bearer ")
                message += f": Incorrect API key provided: {key}"
            self._send_json(fault.status, _error(message, "server_error"), fault.headers)
        elif fault.kind == "hang":
            self.server.fake._stopping.wait()  # until the server stops; the client times out
            self.close_connection = True
        elif fault.kind == "reset":
            # SO_LINGER 0 makes close() send a TCP reset instead of an orderly shutdown.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
        else:
            data = b'{"id": "chatcmpl-broken", "choices": [{'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def _send_json(
        self, status: int, payload: dict[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: Iterator[dict[str, Any] | str]) -> None:
        """Server-Sent Events over chunked transfer encoding, one HTTP chunk per event."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in events:
            payload = event if isinstance(event, str) else json.dumps(event)
            data = f"data: {payload}\n\n".encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _error(message: str, kind: str) -> dict[str, Any]:
    """An error body as OpenAI shapes it."""
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def unsupported_temperature(temperature: object) -> dict[str, Any]:
    """OpenAI's refusal of a temperature by one of its reasoning models, word for word."""
    return {
        "error": {
            "message": f"Unsupported value: 'temperature' does not support {temperature!r} with "
            "this model. Only the default (1) value is supported.",
            "type": "invalid_request_error",
            "param": "temperature",
            "code": "unsupported_value",
        }
    }


def _words(message: dict[str, Any]) -> int:
    return len(str(message.get("content") or "").split())  # content is null beside tool calls


def _usage(
    messages: list[dict[str, Any]], text: str, reasoning: bool = False, cached: bool = False
) -> dict[str, Any]:
    """Token counts, with words standing in for tokens: a reasoning model's reasoning tokens
    (the words of the last message) within its completion tokens, and with `cached` the words
    of every message before the last as cached tokens, shaped as OpenAI reports them."""
    prompt = sum(_words(message) for message in messages)
    thought = _words(messages[-1]) if reasoning and messages else 0
    completion = len(text.split()) + thought
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached:
        last = _words(messages[-1]) if messages else 0
        usage["prompt_tokens_details"] = {"cached_tokens": prompt - last, "audio_tokens": 0}
    if reasoning:
        usage["completion_tokens_details"] = {"reasoning_tokens": thought, "audio_tokens": 0}
    return usage


def _function_calls(
    completion_id: str, tool_calls: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A reply's calls in OpenAI's format."""
    return [
        {
            "id": call.get("id") or f"call_{completion_id}_{i}",
            "type": "function",
            "function": {
                "name": call["name"],
                # A string goes out as it is, so tests can send arguments that are not JSON.
                "arguments": call["arguments"]
                if isinstance(call["arguments"], str)
                else json.dumps(call["arguments"]),
            },
        }
        for i, call in enumerate(tool_calls)
    ]


def _completion(
    completion_id: str,
    model: str,
    text: str,
    usage: dict[str, Any],
    tool_calls: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """A non-streamed chat.completion, with function calls when the reply makes some."""
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if tool_calls:
        message["tool_calls"] = _function_calls(completion_id, tool_calls)
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": usage,
    }


def _chunks(
    completion_id: str,
    model: str,
    text: str,
    usage: dict[str, Any],
    include_usage: bool,
    tool_calls: Sequence[dict[str, Any]] = (),
) -> Iterator[dict[str, Any] | str]:
    """The events of a streamed completion, as OpenAI sends them: the role, the content word by
    word, each function call (a LangChain model streams whenever LangGraph's messages stream is
    watched, the questioner too), the finish reason, the usage if asked for, then [DONE]."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        event: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if include_usage:  # OpenAI then sends "usage": null on every chunk but the last
            event["usage"] = None
        return event

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    # Several content chunks per reply, so clients must join them (keeping spaces and newlines).
    for piece in re.findall(r"\S+\s*|\s+", text) or [""]:
        yield chunk({"content": piece})
    for index, call in enumerate(_function_calls(completion_id, tool_calls)):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, finish_reason="tool_calls" if tool_calls else "stop")
    if include_usage:
        yield {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [],
            "usage": usage,
        }
    yield "[DONE]"


def main(argv: Sequence[str] | None = None) -> None:
    """Serve perfect players (answerer, questioner, judge) for the default instances, or those of
    --instances, until interrupted."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per chat call")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--model", default="fake-model", help="the model name it serves")
    parser.add_argument(
        "--reasoning-model", action="append", default=[], metavar="NAME",
        help="also serve NAME as OpenAI serves its reasoning models: any temperature but 1 is "
        "refused (HTTP 400), and replies report reasoning tokens (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--cached-prompts", action="store_true",
        help="report cached tokens: the words of every message before the last",
    )  # fmt: skip
    parser.add_argument(
        "--instances",
        type=Path,
        help="instances file the answerer knows (default: the shipped one)",
    )
    parser.add_argument(
        "--resources", type=Path, help="clembench's texts, for clembench's instances file"
    )
    args = parser.parse_args(argv)
    players = default_players(args.instances, args.resources)
    with FakeOpenAI(
        players, [args.model], args.latency, port=args.port,
        reasoning_models=args.reasoning_model, cached_prompts=args.cached_prompts,
    ) as server:  # fmt: skip
        print(server.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
