"""Relaying an upstream SSE stream to the client as it arrives, while assembling the assistant's text."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

from gateway.errors import sse_error_event
from gateway.models import UpstreamProvider
from gateway.upstream import TRANSPORT_ERRORS, UpstreamResponse, failure_from
from memory.extraction import MAX_EXTRACTION_TEXT_LENGTH

logger = logging.getLogger("gateway.streaming")


class AssistantTextAssembler:
    """Collects ``choices[0].delta.content`` from OpenAI chat-completion SSE bytes fed in any chunking.

    Only the last :data:`~memory.extraction.MAX_EXTRACTION_TEXT_LENGTH` characters are kept (extraction
    reads no more). Lines that are not JSON ``data:`` events are ignored.
    """

    def __init__(self) -> None:
        self._pending = b""
        self._parts: list[str] = []
        self._length = 0

    def feed(self, chunk: bytes) -> None:
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            self._line(line)

    def _line(self, line: bytes) -> None:
        line = line.strip()
        if not line.startswith(b"data:"):
            return
        data = line[5:].strip()
        if not data or data == b"[DONE]":
            return
        try:
            event = json.loads(data)
            choice = next(c for c in event["choices"] if c.get("index", 0) == 0)
            content = choice["delta"]["content"]
        except (ValueError, KeyError, TypeError, StopIteration, AttributeError):
            return
        if isinstance(content, str) and content:
            self._parts.append(content)
            self._length += len(content)
            if self._length > 2 * MAX_EXTRACTION_TEXT_LENGTH:
                tail = "".join(self._parts)[-MAX_EXTRACTION_TEXT_LENGTH:]
                self._parts, self._length = [tail], len(tail)

    @property
    def text(self) -> str:
        if self._pending:
            self._line(self._pending)
            self._pending = b""
        return "".join(self._parts)[-MAX_EXTRACTION_TEXT_LENGTH:]


class StreamRelay:
    """An async iterable over the upstream body, yielding each chunk as soon as it arrives, unchanged.

    ``completed`` becomes true only when the upstream body ended normally. A timeout or transport error
    after the stream started ends it with an OpenAI-style SSE error event (the status is already sent).
    The upstream response is closed when the iteration ends, fails or is abandoned (client gone).
    """

    def __init__(self, upstream: UpstreamResponse, provider: UpstreamProvider) -> None:
        self.upstream = upstream
        self.provider = provider
        self.assembler = AssistantTextAssembler()
        self.completed = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._relay()

    async def _relay(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.upstream.aiter_bytes():
                self.assembler.feed(chunk)
                yield chunk
            self.completed = True
        except TRANSPORT_ERRORS as exc:
            failure = failure_from(exc, self.provider)
            logger.warning(
                "gateway.stream.interrupted",
                extra={"provider": self.provider.name, "status": failure.status, "error": repr(exc)},
            )
            yield sse_error_event(failure.message, type_=failure.type, code=failure.code)
        finally:
            await self.upstream.aclose()

    @property
    def assistant_text(self) -> str:
        return self.assembler.text
