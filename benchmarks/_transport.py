"""In-memory transports: every contender reads the same bytes through its own HTTP client, no socket.

``httpx`` (our runtime and the floor) and ``httpx2`` (the ``openai`` 3.x and ``anthropic`` 2.x SDKs) each get
a transport of the same kind: ``handle_async_request`` reads the request body and answers 200
``text/event-stream`` with a streaming body that yields the recorded chunks one by one. Before each chunk
the body passes one event-loop checkpoint (``anyio.lowlevel.checkpoint``), as a socket read does, so the
per-read cost of going through the loop is in every contender's figure, the same for all.

``chunks`` may be a list (replayed for every request) or a callable returning an iterable (a generator for
streams too large to hold in memory).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable

import anyio.lowlevel
import httpx
import httpx2

Source = list[bytes] | Callable[[], Iterable[bytes]]
HEADERS = [("content-type", "text/event-stream"), ("x-request-id", "req_bench_0001")]


def _iterate(source: Source) -> Iterable[bytes]:
    return source if isinstance(source, list) else source()


class _Chunks:
    """A body that yields ``source``'s chunks, one event-loop checkpoint each, like socket reads.

    Read once, like a network body: iterating it again yields nothing (the ``openai`` SDK drains the body
    after ``[DONE]``; a replay would charge every contender for reading the stream twice)."""

    def __init__(self, source: Source) -> None:
        self._source = source
        self._read = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._read:
            return
        self._read = True
        checkpoint = anyio.lowlevel.checkpoint
        for chunk in _iterate(self._source):
            await checkpoint()
            yield chunk

    async def aclose(self) -> None:
        return None


# httpx and httpx2 have separate class trees: one body each, the same chunks.
class _Body(_Chunks, httpx.AsyncByteStream):
    pass


class MemoryTransport(httpx.AsyncBaseTransport):
    """An ``httpx`` transport answering every request with ``source``'s chunks."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        self.requests += 1
        return httpx.Response(200, headers=HEADERS, stream=_Body(self.source), request=request)


class _Body2(_Chunks, httpx2.AsyncByteStream):
    pass


class MemoryTransport2(httpx2.AsyncBaseTransport):
    """The same, for ``httpx2`` (what the ``openai`` 3.x and ``anthropic`` 2.x SDKs run on)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.requests = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        self.requests += 1
        return httpx2.Response(200, headers=HEADERS, stream=_Body2(self.source), request=request)
