"""The fault server over real loopback sockets, driven by real httpx / httpx2 clients, on asyncio and trio."""

from __future__ import annotations

import errno
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import ModuleType

import anyio
import httpx
import pytest

from streamfsm.testing import (
    End,
    FaultServer,
    FaultServerError,
    FaultServerThread,
    Fin,
    Headers,
    Keepalive,
    Request,
    Rst,
    Scenario,
    Script,
    ScriptError,
    Send,
    SendRaw,
    Sleep,
    Stall,
    Status,
    check_script,
    cut_chunk,
    encode_chunk,
    unused_port,
)
from tests.support.sockets import open_sockets

httpx2 = pytest.importorskip("httpx2", reason="httpx2, the newest SDKs' HTTP client, needs Python 3.11")

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

pytestmark = pytest.mark.anyio

EVENT_1 = b'data: {"n":1}\n\n'
EVENT_2 = b'data: {"n":2}\n\n'
DONE = b"data: [DONE]\n\n"
BOUND = 10.0  # seconds: the outer bound on every wait; a healthy run takes milliseconds


def client(module: ModuleType = httpx, read: float = 5.0) -> httpx.AsyncClient:
    # trust_env=False: a proxy from the environment must never see loopback fault traffic.
    result: httpx.AsyncClient = module.AsyncClient(timeout=module.Timeout(5.0, read=read), trust_env=False)
    return result


def chain(exc: BaseException) -> list[BaseException]:
    """The exception, its causes and contexts (suppressed ones too), and members of exception groups."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        current = todo.pop()
        if any(current is s for s in seen):
            continue
        seen.append(current)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
    return seen


def errnos(exc: BaseException) -> set[int]:
    return {e.errno for e in chain(exc) if isinstance(e, OSError) and e.errno is not None}


async def settle_fds(baseline: set[str]) -> set[str]:
    """Socket fds opened since ``baseline`` still open after up to 1 s (asyncio closes a turn late)."""
    with anyio.move_on_after(1.0):
        while open_sockets() - baseline:
            await anyio.sleep(0.01)
    return open_sockets() - baseline


@dataclass
class Received:
    status: int | None = None
    chunks: list[bytes] | None = None
    error: BaseException | None = None


async def stream_post(http: httpx.AsyncClient, url: str, **kwargs: object) -> Received:
    """POST and read the body chunk by chunk, keeping what arrived before any error."""
    received = Received(chunks=[])
    assert received.chunks is not None
    try:
        async with http.stream("POST", url, **kwargs) as response:  # type: ignore[arg-type]
            received.status = response.status_code
            async for chunk in response.aiter_raw():
                received.chunks.append(chunk)
    except Exception as exc:
        received.error = exc
    return received


# -- the fault table: each fault as each client generation sees it -------------------------------------------


@dataclass(frozen=True)
class Fault:
    script: Script
    error: str  # the class name in httpx / httpx2
    message: str  # a substring of str(error)
    status: int | None  # None: the error came before the response headers
    body: bytes  # what arrived before the error
    errno: int | None = None


FAULTS = {
    "fin_before_response": Fault(
        (Fin(),), "RemoteProtocolError", "Server disconnected without sending a response", None, b""
    ),
    "rst_before_response": Fault((Rst(),), "ReadError", "", None, b"", errno.ECONNRESET),
    "headers_then_fin": Fault((Headers(), Fin()), "RemoteProtocolError", "incomplete chunked read", 200, b""),
    "events_then_fin": Fault(
        (Headers(), Send(EVENT_1), Send(EVENT_2), Fin()),
        "RemoteProtocolError",
        "incomplete chunked read",
        200,
        EVENT_1 + EVENT_2,
    ),
    "events_then_rst": Fault(
        (Headers(), Send(EVENT_1), Send(EVENT_2), Sleep(0.05), Rst()),
        "ReadError",
        "",
        200,
        EVENT_1 + EVENT_2,
        errno.ECONNRESET,
    ),
    "chunk_cut_short": Fault(
        (Headers(), Send(EVENT_1), cut_chunk(EVENT_2, 6), Fin()),
        "RemoteProtocolError",
        "incomplete chunked read",
        200,
        EVENT_1 + EVENT_2[:6],
    ),
    "script_runs_out_mid_body": Fault(
        (Headers(), Send(EVENT_1)), "RemoteProtocolError", "incomplete chunked read", 200, EVENT_1
    ),
    "bad_chunk_header": Fault(
        (Headers(), SendRaw(b"zz\r\n"), Fin()), "RemoteProtocolError", "illegal chunk header", 200, b""
    ),
}


@pytest.mark.parametrize("module", [httpx, httpx2], ids=["httpx", "httpx2"])
@pytest.mark.parametrize("name", list(FAULTS))
async def test_fault_reaches_the_client_as_measured(name: str, module: ModuleType) -> None:
    fault = FAULTS[name]
    with anyio.fail_after(BOUND):
        async with FaultServer(fault.script) as server, client(module) as http:
            received = await stream_post(http, server.base_url + "/v1/chat/completions", json={"x": 1})
    assert received.error is not None
    assert type(received.error) is getattr(module, fault.error)
    assert fault.message in str(received.error)
    assert received.status == fault.status
    assert b"".join(received.chunks or []) == fault.body
    if fault.errno is not None:
        assert fault.errno in errnos(received.error)


async def test_normal_chunked_sse_stream_arrives_intact() -> None:
    frames = [b'data: {"i":%d,"pad":"%s"}\n\n' % (i, b"x" * i * 100) for i in range(20)] + [DONE]
    script = (Headers(), *(Send(f) for f in frames), End())
    with anyio.fail_after(BOUND):
        async with (
            FaultServer(script) as server,
            client() as http,
            http.stream("POST", server.base_url + "/v1/chat/completions", json={}) as response,
        ):
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            assert response.headers["transfer-encoding"] == "chunked"
            body = b"".join([chunk async for chunk in response.aiter_raw()])
    assert body == b"".join(frames)


async def test_status_429_delivers_code_headers_and_body() -> None:
    body = b'{"error":{"type":"rate_limit_error","message":"slow down"}}'
    headers = (("content-type", "application/json"), ("retry-after", "7"), ("x-request-id", "req_1"))
    with anyio.fail_after(BOUND):
        async with FaultServer((Status(429, headers, body),)) as server, client() as http:
            response = await http.post(server.base_url + "/v1/messages", json={})
    assert response.status_code == 429
    assert response.reason_phrase == "Too Many Requests"
    assert response.headers["retry-after"] == "7"
    assert response.headers["x-request-id"] == "req_1"
    assert response.headers["connection"] == "close"
    assert response.content == body


async def test_529_has_a_reason_phrase() -> None:
    with anyio.fail_after(BOUND):
        async with FaultServer((Status(529, body=b"{}"),)) as server, client() as http:
            response = await http.get(server.base_url + "/")
    assert (response.status_code, response.reason_phrase) == (529, "Site Overloaded")


async def test_stall_hits_the_client_read_timeout_within_bounds() -> None:
    with anyio.fail_after(BOUND):
        async with FaultServer((Stall(),)) as server, client(read=0.2) as http:
            started = time.monotonic()
            received = await stream_post(http, server.base_url + "/v1/responses", json={})
            elapsed = time.monotonic() - started
    assert isinstance(received.error, httpx.ReadTimeout)
    assert received.status is None
    assert 0.15 <= elapsed < 2.0


async def test_stall_before_headers_then_a_late_response() -> None:
    script = (Sleep(0.3), Headers(), Send(EVENT_1), End())
    with anyio.fail_after(BOUND):
        async with FaultServer(script) as server:
            async with client(read=0.1) as http:
                early = await stream_post(http, server.base_url + "/a", json={})
            async with client(read=2.0) as http:
                late = await stream_post(http, server.base_url + "/b", json={})
    assert isinstance(early.error, httpx.ReadTimeout)
    assert early.status is None
    assert late.error is None
    assert (late.status, late.chunks) == (200, [EVENT_1])


async def test_keepalive_frames_arrive_periodically_and_defeat_a_read_timeout() -> None:
    # 8 comments 50 ms apart: 0.4 s of no progress, yet no read ever waits the 0.25 s read timeout.
    script = (Headers(), Send(EVENT_1), Keepalive(every=0.05, count=8), Send(DONE), End())
    arrivals: list[tuple[float, bytes]] = []
    with anyio.fail_after(BOUND):
        async with (
            FaultServer(script) as server,
            client(read=0.25) as http,
            http.stream("POST", server.base_url + "/v1/chat/completions", json={}) as response,
        ):
            async for chunk in response.aiter_raw():
                arrivals.append((time.monotonic(), chunk))
    body = b"".join(chunk for _, chunk in arrivals)
    assert body == EVENT_1 + b": keepalive\n\n" * 8 + DONE
    # Arrival times per keepalive frame. A busy client may read two frames in one go, so assert on the pacing
    # the server guarantees (at least 8 x 50 ms after the first event) rather than on chunk boundaries.
    first_event = arrivals[0][0]
    keepalive_times = [t for t, chunk in arrivals for _ in range(chunk.count(b": keepalive\n\n"))]
    assert len(keepalive_times) == 8
    assert len(set(keepalive_times)) >= 2  # spread out, not sent as one burst
    assert keepalive_times[-1] - first_event >= 0.35


async def test_sequential_requests_on_one_keepalive_connection_get_their_own_scripts() -> None:
    def router(request: Request) -> Script:
        if request.seq == 0:
            return (Headers(), Send(EVENT_1), End())
        if request.seq == 1:
            return (Status(200, (("content-type", "application/json"),), b'{"second":true}', close=False),)
        return (Headers(), Send(DONE), End())

    with anyio.fail_after(BOUND):
        async with FaultServer(router) as server, client() as http:
            first = await http.post(server.base_url + "/one", json={})
            second = await http.post(server.base_url + "/two", json={})
            third = await http.post(server.base_url + "/three", json={})
    assert (first.content, second.content, third.content) == (EVENT_1, b'{"second":true}', DONE)
    records = server.requests
    assert [r.path for r in records] == ["/one", "/two", "/three"]
    assert len({r.connection for r in records}) == 1


async def test_a_closing_status_makes_the_next_request_use_a_new_connection() -> None:
    with anyio.fail_after(BOUND):
        async with FaultServer((Status(500, body=b"oops"),)) as server, client() as http:
            for _ in range(2):
                assert (await http.get(server.base_url + "/")).status_code == 500
    assert [r.connection for r in server.requests] == [0, 1]


async def test_router_sees_path_query_headers_and_body() -> None:
    seen: list[Request] = []

    def router(request: Request) -> Script:
        seen.append(request)
        return (Status(204, close=False),)

    big = b"y" * 10_000

    async def chunked_body() -> AsyncIterator[bytes]:
        for part in (b"alpha-", b"beta-", big):
            yield part

    headers = {"authorization": "Bearer sk-secret-1", "x-api-key": "sk-secret-2", "x-trace": "t-1"}
    with anyio.fail_after(BOUND):
        async with FaultServer(router) as server, client() as http:
            url = server.base_url + "/v1/chat/completions?stream=true&x=1"
            await http.post(url, content=b'{"model":"m"}', headers=headers)
            await http.post(server.base_url + "/upload", content=chunked_body())
    first, second = seen
    assert (first.method, first.path, first.query) == ("POST", "/v1/chat/completions", "stream=true&x=1")
    assert first.body == b'{"model":"m"}'
    assert first.header("Authorization") == "Bearer sk-secret-1"
    assert first.header("X-Trace") == "t-1"
    assert first.header("content-length") == "13"
    assert second.header("transfer-encoding") == "chunked"
    assert second.body == b"alpha-beta-" + big
    # What the server keeps is redacted and bounded.
    kept_first, kept_second = server.requests
    assert kept_first.header("authorization") == "[redacted]"
    assert kept_first.header("x-api-key") == "[redacted]"
    assert kept_first.header("x-trace") == "t-1"
    assert (kept_second.body_size, len(kept_second.body_head)) == (len(second.body), 4096)
    assert "sk-secret" not in repr(first) + repr(server.requests)


async def test_server_stops_promptly_with_stalled_connections_and_leaves_no_socket() -> None:
    stalls: dict[int, Script] = {
        0: (Stall(),),
        1: (Sleep(60),),
        2: (Headers(), Send(EVENT_1), Sleep(60)),
        3: (Headers(), Keepalive(every=30, count=100)),
    }
    baseline = open_sockets()
    results: list[Received] = []

    async def call(http: httpx.AsyncClient, url: str) -> None:
        results.append(await stream_post(http, url, json={}))

    with anyio.fail_after(BOUND):
        async with client(read=30.0) as http, anyio.create_task_group() as tg:
            async with FaultServer(lambda request: stalls[request.seq]) as server:
                for _ in stalls:  # one at a time, so request seq n gets script n
                    tg.start_soon(call, http, server.base_url + "/stall")
                    await server.wait_for_requests(server.requests_seen + 1)
                assert server.open_connections == len(stalls)
                stopping = time.monotonic()
            stop_took = time.monotonic() - stopping
            assert server.open_connections == 0
    assert stop_took < 2.0
    assert len(results) == len(stalls)
    for received in results:
        assert isinstance(received.error, httpx.RemoteProtocolError)
    assert await settle_fds(baseline) == set()


@pytest.fixture
async def events_server() -> AsyncIterator[FaultServer]:
    # The shape a pytest plugin fixture takes: set-up and tear-down in one fixture task.
    async with FaultServer((Headers(), Send(EVENT_1), End())) as server:
        yield server


async def test_a_server_from_an_async_fixture(events_server: FaultServer) -> None:
    with anyio.fail_after(BOUND):
        async with client() as http:
            response = await http.post(events_server.base_url + "/", json={})
    assert response.content == EVENT_1


async def test_no_socket_outlives_the_server_across_faults() -> None:
    baseline = open_sockets()
    with anyio.fail_after(BOUND):
        for fault in FAULTS.values():
            async with FaultServer(fault.script) as server, client() as http:
                await stream_post(http, server.base_url + "/", json={})
    assert await settle_fds(baseline) == set()


async def test_unused_port_refuses_the_connection() -> None:
    with anyio.fail_after(BOUND):
        async with client() as http:
            with pytest.raises(httpx.ConnectError) as caught:
                await http.get(f"http://127.0.0.1:{unused_port()}/")
    assert errno.ECONNREFUSED in errnos(caught.value)


async def test_a_failing_router_answers_500_and_fails_the_context() -> None:
    def router(request: Request) -> Script:
        raise LookupError(f"no scenario for {request.path}")

    statuses: list[int] = []

    async def call_it() -> None:
        async with FaultServer(router) as server, client() as http:
            statuses.append((await http.get(server.base_url + "/nowhere")).status_code)

    with anyio.fail_after(BOUND), pytest.raises(FaultServerError) as caught:
        await call_it()
    assert statuses == [500]
    assert isinstance(caught.value.__cause__, LookupError)


async def test_a_router_returning_an_invalid_script_fails_the_context() -> None:
    statuses: list[int] = []

    async def call_it() -> None:
        async with FaultServer(lambda request: (Send(EVENT_1),)) as server, client() as http:
            statuses.append((await http.get(server.base_url + "/")).status_code)

    with anyio.fail_after(BOUND), pytest.raises(FaultServerError) as caught:
        await call_it()
    assert statuses == [500]
    assert isinstance(caught.value.__cause__, ScriptError)


async def test_the_body_exception_escapes_unwrapped() -> None:
    # Not wrapped in an exception group on trio: the server's task group never sees it.
    with anyio.fail_after(BOUND), pytest.raises(KeyError):
        async with FaultServer((Status(200),)):
            raise KeyError("from the test body")


# -- the wire, byte for byte, with a raw socket -------------------------------------------------------------


async def raw_exchange(port: int, request: bytes, *, until: Callable[[bytes], bool]) -> bytes:
    async with await anyio.connect_tcp("127.0.0.1", port) as sock:
        await sock.send(request)
        data = b""
        while not until(data):
            try:
                data += await sock.receive()
            except anyio.EndOfStream:
                break
        return data


GET = b"GET /x HTTP/1.1\r\nhost: t\r\n\r\n"


async def test_wire_bytes_of_a_chunked_stream() -> None:
    expected = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + encode_chunk(EVENT_1)
        + b"0\r\n\r\n"
    )
    with anyio.fail_after(BOUND):
        async with FaultServer((Headers(), Send(EVENT_1), End())) as server:
            data = await raw_exchange(server.port, GET, until=lambda d: len(d) >= len(expected))
    assert data == expected


async def test_pipelined_requests_are_answered_in_order() -> None:
    def router(request: Request) -> Script:
        return (Status(200, body=request.path.encode(), close=False),)

    two = GET.replace(b"/x", b"/first") + b"POST /second HTTP/1.1\r\ncontent-length: 3\r\n\r\nabc"
    with anyio.fail_after(BOUND):
        async with FaultServer(router) as server:
            data = await raw_exchange(server.port, two, until=lambda d: d.endswith(b"/second"))
    assert data.count(b"HTTP/1.1 200 OK") == 2
    assert data.index(b"/first") < data.index(b"/second")


async def test_expect_100_continue_is_honoured() -> None:
    request = b"POST /u HTTP/1.1\r\ncontent-length: 2\r\nexpect: 100-continue\r\n\r\n"
    with anyio.fail_after(BOUND):
        async with (
            FaultServer((Status(201, body=b"ok"),)) as server,
            await anyio.connect_tcp("127.0.0.1", server.port) as sock,
        ):
            await sock.send(request)
            interim = await sock.receive()
            await sock.send(b"hi")
            final = b""
            while not final.endswith(b"ok"):
                final += await sock.receive()
    assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert final.startswith(b"HTTP/1.1 201 Created\r\n")
    assert server.requests[0].body_head == b"hi"


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"NONSENSE\r\n\r\n", b"400"),
        (b"GET / HTTP/2.0\r\n\r\n", b"505"),
        (b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", b"400"),
        (b"POST / HTTP/1.1\r\ncontent-length: -1\r\n\r\n", b"400"),
        (b"GET / HTTP/1.1\r\nx: " + b"a" * 70_000 + b"\r\n\r\n", b"431"),
    ],
    ids=["request_line", "version", "chunk_size", "content_length", "head_too_long"],
)
async def test_malformed_requests_get_an_error_and_a_close(request_bytes: bytes, status: bytes) -> None:
    with anyio.fail_after(BOUND):
        async with FaultServer((Status(200),)) as server:
            data = await raw_exchange(server.port, request_bytes, until=lambda d: False)
    assert data.startswith(b"HTTP/1.1 " + status)
    assert b"connection: close" in data
    assert server.requests == []


async def test_fin_and_rst_as_a_raw_socket_sees_them() -> None:
    with anyio.fail_after(BOUND):
        async with FaultServer((Fin(),)) as server:
            assert await raw_exchange(server.port, GET, until=lambda d: False) == b""
        async with FaultServer((Rst(),)) as server:
            with pytest.raises(anyio.BrokenResourceError) as caught:
                await raw_exchange(server.port, GET, until=lambda d: False)
    assert errno.ECONNRESET in errnos(caught.value)


# -- scripts as data ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "steps",
    [
        (Send(EVENT_1),),
        (Keepalive(0.1, 1),),
        (End(),),
        (Headers(), Headers()),
        (Status(200), Headers()),
        (Headers(), End(), Send(EVENT_1)),
        (Fin(), Sleep(1)),
        (Rst(), Fin()),
        (Stall(), End()),
        ("not a step",),
    ],
)
def test_unplayable_scripts_are_rejected(steps: tuple[object, ...]) -> None:
    with pytest.raises(ScriptError):
        check_script(steps)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "build",
    [
        lambda: Send(b""),
        lambda: Sleep(-1),
        lambda: Sleep(float("nan")),
        lambda: Keepalive(0.1, -1),
        lambda: Keepalive(0.1, 1, b""),
        lambda: Status(42),
        lambda: Headers(200, (("x-bad", "a\r\nb"),)),
        lambda: cut_chunk(b"abc", 3),
    ],
)
def test_invalid_steps_are_rejected(build: Callable[[], object]) -> None:
    with pytest.raises(ScriptError):
        build()


def test_scripts_and_scenarios_are_frozen_data() -> None:
    meta = {"expected_class": "early_stream"}
    scenario = Scenario("headers_then_fin", [Headers(), Fin()], meta)  # type: ignore[arg-type]
    meta["expected_class"] = "changed"
    assert scenario.script == (Headers(), Fin())
    assert scenario.meta["expected_class"] == "early_stream"
    with pytest.raises(TypeError):
        scenario.meta["x"] = 1  # type: ignore[index]
    assert hash(Headers()) == hash(Headers())
    assert check_script((Headers(), End(), Sleep(0.1), Fin())) == (Headers(), End(), Sleep(0.1), Fin())
    assert cut_chunk(b"abcdef", 2) == SendRaw(b"6\r\nab")


# -- the threaded server, for synchronous clients -----------------------------------------------------------


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_thread_server_serves_sync_clients_and_leaves_nothing_behind(backend: str) -> None:
    def router(request: Request) -> Script:
        if request.path == "/rst":
            return (Rst(),)
        if request.path == "/stall":
            return (Stall(),)
        return (Headers(), Send(EVENT_1), Send(DONE), End())

    threads, fds = threading.active_count(), open_sockets()
    started = time.monotonic()
    with FaultServerThread(router, backend=backend) as server:  # type: ignore[arg-type]
        assert time.monotonic() - started < 2.0
        with httpx.Client(timeout=httpx.Timeout(5.0, read=0.2), trust_env=False) as http:
            assert http.post(server.base_url + "/ok", json={}).content == EVENT_1 + DONE
            with pytest.raises(httpx.ReadError) as caught:
                http.post(server.base_url + "/rst", json={})
            assert errno.ECONNRESET in errnos(caught.value)
        with httpx2.Client(timeout=httpx2.Timeout(5.0, read=0.2), trust_env=False) as http2:
            assert http2.post(server.base_url + "/ok", json={}).content == EVENT_1 + DONE
        # A connection left stalled when the server stops.
        stalled = httpx.Client(timeout=httpx.Timeout(5.0, read=30.0), trust_env=False)
        worker_errors: list[BaseException] = []

        def stall() -> None:
            try:
                stalled.post(server.base_url + "/stall", json={})
            except Exception as exc:
                worker_errors.append(exc)

        worker = threading.Thread(target=stall)
        worker.start()
        assert server.wait_for_requests(4, timeout=BOUND)
        stopping = time.monotonic()
    assert time.monotonic() - stopping < 2.0
    worker.join(BOUND)
    stalled.close()
    assert not worker.is_alive()
    assert [type(e) for e in worker_errors] == [httpx.RemoteProtocolError]
    assert [r.path for r in server.requests] == ["/ok", "/rst", "/ok", "/stall"]
    assert threading.active_count() == threads
    assert open_sockets() == fds


def test_thread_server_reports_a_failed_start() -> None:
    with FaultServerThread((Status(200),)) as first:
        taken = FaultServerThread((Status(200),), port=first.port)
        with pytest.raises(OSError, match="in use") as caught:
            taken.__enter__()
    assert caught.value.errno == errno.EADDRINUSE
