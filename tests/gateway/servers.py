"""Real HTTP servers for gateway tests: any ASGI app on a free local port, and a recording upstream."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn


class ServerThread:
    """Serve an ASGI app with uvicorn on 127.0.0.1:<free port> in a daemon thread."""

    def __init__(self, app, *, name: str):
        # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets whose proto says
        # TCP, and with Nagle on, a response sent as headers + body waits ~40 ms for a delayed ACK.
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False, loop="asyncio")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, name=name)
        self.thread.daemon = True

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)
        self.sock.close()


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def messages(self) -> list[dict]:
        return self.json["messages"]


@dataclass
class UpstreamStub:
    """An OpenAI-compatible upstream that records every request and answers as configured.

    ``reply`` is the assistant's text (streamed one word per chunk, ``chunk_delay`` apart). ``status`` ≠
    200 answers ``error_body`` with that status and a ``retry-after`` header. ``delay`` sleeps before
    answering. With ``gate`` set, a stream pauses after its first content chunk until the gate opens (at
    most ``gate_timeout`` s) and records in ``gate_opened`` whether it did.
    """

    requests: list[Recorded] = field(default_factory=list)
    reply: str = "Hello from upstream."
    status: int = 200
    error_body: dict = field(
        default_factory=lambda: {"error": {"message": "stub says no", "type": "stub_error", "code": "nope"}}
    )
    delay: float = 0.0
    chunk_delay: float = 0.0
    gate: threading.Event | None = None
    gate_timeout: float = 5.0
    gate_opened: bool | None = None
    model_ids: list[str] = field(default_factory=lambda: ["stub-large", "stub-small"])

    def reset(self) -> None:
        fresh = UpstreamStub()
        self.__dict__.update(fresh.__dict__)

    @property
    def last(self) -> Recorded:
        return self.requests[-1]

    async def __call__(self, scope, receive, send):
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.requests.append(Recorded(scope["method"], scope["path"], headers, body))
        if self.delay:
            await asyncio.sleep(self.delay)
        if scope["path"].endswith("/models"):
            data = {"object": "list", "data": [{"id": m, "object": "model"} for m in self.model_ids]}
            return await self._json(send, 200, data)
        if self.status != 200:
            return await self._json(send, self.status, self.error_body, [(b"retry-after", b"7")])
        request = json.loads(body)
        if request.get("stream"):
            return await self._stream(send, request)
        return await self._json(send, 200, self._completion(request))

    def _completion(self, request) -> dict:
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 1700000000,
            "model": request.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.reply},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    async def _json(self, send, status, data, extra_headers=()):
        payload = json.dumps(data).encode()
        headers = [(b"content-type", b"application/json"), (b"x-request-id", b"req-stub"), *extra_headers]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def _stream(self, send, request):
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )

        async def event(delta, finish=None):
            chunk = {
                "id": "chatcmpl-stub",
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": request.get("model"),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            data = b"data: " + json.dumps(chunk).encode() + b"\n\n"
            await send({"type": "http.response.body", "body": data, "more_body": True})

        await event({"role": "assistant", "content": ""})
        words = self.reply.split(" ")
        for index, word in enumerate(words):
            await event({"content": word if index == 0 else " " + word})
            if index == 0 and self.gate is not None:
                deadline = time.monotonic() + self.gate_timeout
                while not self.gate.is_set() and time.monotonic() < deadline:
                    await asyncio.sleep(0.01)
                self.gate_opened = self.gate.is_set()
            elif self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
        await event({}, "stop")
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})
