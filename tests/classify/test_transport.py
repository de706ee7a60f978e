"""Transport facts from real exception chains (caused on 127.0.0.1) and from exact synthetic ones."""

from __future__ import annotations

import asyncio
import errno
import itertools
import re
import socket
import ssl
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import ModuleType

import anthropic
import anyio
import h11
import httpcore
import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfsm.classify import Confidence, TransportFacts, TransportKind
from streamfsm.classify._transport import transport_facts

httpx2 = pytest.importorskip("httpx2", reason="httpx2, the newest SDKs' HTTP client, needs Python 3.11")
httpcore2 = pytest.importorskip("httpcore2")

if sys.version_info >= (3, 11):
    from builtins import BaseExceptionGroup, ExceptionGroup
else:  # anyio depends on the backport there
    from exceptiongroup import BaseExceptionGroup, ExceptionGroup

T = TransportKind
WAIT = 3.0  # every socket wait in these tests is bounded by this
SECRET = "sk-abc123SECRETxyz"
MARKER = re.compile(
    r"class=[a-z0-9_]+\.[A-Za-z]+|errno=E[A-Z]+|headers_(received|not_received|unknown)"
    r"|message=(no_response|incomplete_body)"
)

# -- a scripted peer on 127.0.0.1 ----------------------------------------------------------------------------

SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


EVENT = chunk(b'data: {"type":"ping"}\n\n')


def read_request(conn: socket.socket) -> None:
    """Read a whole request: close with unread bytes would send an RST instead of the FIN a test wants."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return
        data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    want = int(length.group(1)) if length else 0
    while len(rest) < want:
        more = conn.recv(65536)
        if not more:
            return
        rest += more


def reset(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close() now sends RST


class Peer:
    """Accepts one connection, reads the request, then plays ``script(conn, proceed)`` and closes.

    ``proceed`` is set by the client once it has read the first body chunk, so a mid-body fault happens
    after the client saw data, not before."""

    def __init__(self, script: Callable[[socket.socket, threading.Event], None]) -> None:
        self.script = script
        self.proceed = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(WAIT)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1/stream"
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        try:
            conn.settimeout(WAIT)
            read_request(conn)
            self.script(conn, self.proceed)
        except OSError:
            pass  # the client may go first; the test asserts on the client's side
        finally:
            conn.close()

    def __enter__(self) -> Peer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.proceed.set()
        self.thread.join(WAIT * 2)
        self.listener.close()
        assert not self.thread.is_alive()


def wait_for_client_to_leave(conn: socket.socket) -> None:
    with suppress(OSError):
        conn.recv(1)  # returns when the client closes, or times out after WAIT


def send_then(payload: bytes, then: str = "close") -> Callable[[socket.socket, threading.Event], None]:
    """A script: send ``payload``; then close (FIN), reset (RST) once the client has read, or stall."""

    def script(conn: socket.socket, proceed: threading.Event) -> None:
        conn.sendall(payload)
        if then == "fin_after_read":
            proceed.wait(WAIT)
        elif then == "rst_after_read":
            proceed.wait(WAIT)
            reset(conn)
        elif then == "stall":
            wait_for_client_to_leave(conn)

    return script


def reset_now(conn: socket.socket, proceed: threading.Event) -> None:
    reset(conn)


SCRIPTS: dict[str, Callable[[socket.socket, threading.Event], None]] = {
    "fin_before_response": send_then(b""),
    "rst_before_response": reset_now,
    "headers_then_fin": send_then(SSE_HEAD),
    "events_then_fin": send_then(SSE_HEAD + EVENT, "fin_after_read"),
    "truncated_chunk": send_then(SSE_HEAD + b"100\r\ndata: partial"),
    "events_then_rst": send_then(SSE_HEAD + EVENT, "rst_after_read"),
    "stall": send_then(SSE_HEAD + EVENT, "stall"),
    "garbage_status_line": send_then(b"NOT HTTP AT ALL\r\n\r\n"),
}


def refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1/stream"  # nothing listens there any more


# -- clients -------------------------------------------------------------------------------------------------


def fetch(
    lib: ModuleType, mode: str, url: str, proceed: threading.Event, read: float = WAIT
) -> tuple[BaseException, bool]:
    """Stream ``url`` with ``lib`` (httpx or httpx2) in ``mode`` (sync, asyncio, trio); return the exception
    and whether response headers had arrived, as the runtime would know it."""
    timeout = lib.Timeout(WAIT, read=read)
    seen = {"headers": False}

    def sync() -> None:
        with lib.Client(timeout=timeout) as client, client.stream("POST", url, json={"q": 1}) as response:
            seen["headers"] = True
            for _ in response.iter_raw():
                proceed.set()

    async def run_async() -> None:
        async with (
            lib.AsyncClient(timeout=timeout) as client,
            client.stream("POST", url, json={"q": 1}) as response,
        ):
            seen["headers"] = True
            async for _ in response.aiter_raw():
                proceed.set()

    try:
        if mode == "sync":
            sync()
        else:
            anyio.run(run_async, backend=mode)
    except Exception as exc:
        return exc, seen["headers"]
    finally:
        proceed.set()
    pytest.fail("the stream ended without an error")


# -- the measured chains (§7 of the design), for httpx and httpx2 on every backend ---------------------------

BROKEN = {"sync": (), "asyncio": ("anyio.BrokenResourceError",), "trio": ("trio.BrokenResourceError",)}
CONNECT_OS = {"sync": (), "asyncio": ("builtins.OSError",), "trio": ("builtins.OSError",)}
STALL_TAIL = {
    "sync": "builtins.TimeoutError",
    "asyncio": "builtins.TimeoutError",
    "trio": "trio.TooSlowError",
}


def expected(fault: str, mode: str) -> tuple[TransportKind, tuple[str, ...], int | None, bool]:
    """(kind, chain with {x}/{c} for the httpx/httpcore family, errno, headers received)."""
    closed = ("{x}.RemoteProtocolError", "{c}.RemoteProtocolError", "h11._util.RemoteProtocolError")
    reset_chain = ("{x}.ReadError", "{c}.ReadError", *BROKEN[mode], "builtins.ConnectionResetError")
    table = {
        "refused": (
            T.REFUSED,
            ("{x}.ConnectError", "{c}.ConnectError", *CONNECT_OS[mode], "builtins.ConnectionRefusedError"),
            errno.ECONNREFUSED,
            False,
        ),
        "fin_before_response": (
            T.CLOSED_BEFORE_RESPONSE,
            ("{x}.RemoteProtocolError", "{c}.RemoteProtocolError"),
            None,
            False,
        ),
        "rst_before_response": (T.RESET, reset_chain, errno.ECONNRESET, False),
        "headers_then_fin": (T.CLOSED_MID_BODY, closed, None, True),
        "events_then_fin": (T.CLOSED_MID_BODY, closed, None, True),
        "truncated_chunk": (T.CLOSED_MID_BODY, closed, None, True),
        "events_then_rst": (T.RESET, reset_chain, errno.ECONNRESET, True),
        "stall": (T.READ_TIMEOUT, ("{x}.ReadTimeout", "{c}.ReadTimeout", STALL_TAIL[mode]), None, True),
        "garbage_status_line": (T.PROTOCOL, closed, None, False),
    }
    return table[fault]


LIBS = {"httpx": (httpx, "httpcore"), "httpx2": (httpx2, "httpcore2")}
FAULTS = ["refused", *SCRIPTS]


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("mode", ["sync", "asyncio", "trio"])
@pytest.mark.parametrize("lib_name", sorted(LIBS))
def test_real_chain(lib_name: str, mode: str, fault: str) -> None:
    lib, core = LIBS[lib_name]
    kind, chain, code, headers = expected(fault, mode)
    read = 0.3 if fault == "stall" else WAIT
    if fault == "refused":
        exc, headers_received = fetch(lib, mode, refused_url(), threading.Event())
    else:
        with Peer(SCRIPTS[fault]) as peer:
            exc, headers_received = fetch(lib, mode, peer.url, peer.proceed, read=read)
    assert headers_received is headers

    facts = transport_facts(exc, headers_received=headers_received)
    assert facts.kind is kind
    assert facts.chain == tuple(name.format(x=lib_name, c=core) for name in chain)
    assert facts.errno == code
    assert facts.confidence is Confidence.HIGH
    assert all(MARKER.fullmatch(m) for m in facts.markers), facts.markers
    if code is not None:
        assert f"errno={errno.errorcode[code]}" in facts.markers


@pytest.mark.parametrize("mode", ["sync", "asyncio", "trio"])
def test_without_headers_fact_the_wording_decides_at_low_confidence(mode: str) -> None:
    with Peer(SCRIPTS["fin_before_response"]) as peer:
        before, _ = fetch(httpx, mode, peer.url, peer.proceed)
    with Peer(SCRIPTS["events_then_fin"]) as peer:
        mid, _ = fetch(httpx, mode, peer.url, peer.proceed)
    assert transport_facts(before) == TransportFacts(
        T.CLOSED_BEFORE_RESPONSE,
        chain=("httpx.RemoteProtocolError", "httpcore.RemoteProtocolError"),
        markers=("class=httpx.RemoteProtocolError", "message=no_response"),
        confidence=Confidence.LOW,
    )
    got = transport_facts(mid)
    assert (got.kind, got.confidence) == (T.CLOSED_MID_BODY, Confidence.LOW)
    assert got.markers == ("class=httpx.RemoteProtocolError", "message=incomplete_body")


def test_headers_fact_wins_over_the_wording() -> None:
    with Peer(SCRIPTS["events_then_fin"]) as peer:
        exc, _ = fetch(httpx, "sync", peer.url, peer.proceed)
    assert transport_facts(exc, headers_received=True).markers == (
        "class=httpx.RemoteProtocolError",
        "headers_received",
    )
    # a caller that says no headers arrived is believed: h11 then means a malformed response
    assert transport_facts(exc, headers_received=False).kind is T.PROTOCOL


@contextmanager
def full_backlog() -> Iterator[str]:
    """A listener that never accepts, with its backlog filled: the kernel drops further SYNs."""
    listener = socket.socket()
    fillers: list[socket.socket] = []
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            fillers.append(filler)
            with suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
        yield f"http://127.0.0.1:{port}/"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


@pytest.mark.parametrize("lib_name", sorted(LIBS))
def test_real_connect_timeout(lib_name: str) -> None:
    lib, core = LIBS[lib_name]
    with full_backlog() as url, pytest.raises(lib.ConnectTimeout) as info:
        lib.get(url, timeout=lib.Timeout(WAIT, connect=0.3))
    facts = transport_facts(info.value, headers_received=False)
    assert facts.kind is T.CONNECT_TIMEOUT
    assert facts.chain == (f"{lib_name}.ConnectTimeout", f"{core}.ConnectTimeout", "builtins.TimeoutError")
    assert facts.markers == (f"class={lib_name}.ConnectTimeout",)


def test_real_connect_timeout_on_trio_hides_the_cancellation() -> None:
    async def main() -> None:
        async with httpx.AsyncClient(timeout=httpx.Timeout(WAIT, connect=0.3)) as client:
            await client.get(url)

    with full_backlog() as url, pytest.raises(httpx.ConnectTimeout) as info:
        anyio.run(main, backend="trio")
    facts = transport_facts(info.value)
    assert facts.kind is T.CONNECT_TIMEOUT
    assert facts.chain == ("httpx.ConnectTimeout", "httpcore.ConnectTimeout", "trio.TooSlowError")


def test_real_pool_timeout() -> None:
    limits = httpx.Limits(max_connections=1)
    with (
        Peer(SCRIPTS["stall"]) as peer,
        httpx.Client(timeout=httpx.Timeout(WAIT, pool=0.2), limits=limits) as client,
        client.stream("GET", peer.url),
        pytest.raises(httpx.PoolTimeout) as info,
    ):
        client.get(peer.url)  # the only connection is busy
    facts = transport_facts(info.value, headers_received=False)
    assert (facts.kind, facts.confidence) == (T.CONNECT_TIMEOUT, Confidence.MEDIUM)
    assert facts.chain == ("httpx.PoolTimeout", "httpcore.PoolTimeout")


# -- the SDKs on top of httpx2 -------------------------------------------------------------------------------

OPENAI_CHUNK = chunk(
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
)
ANTHROPIC_START = chunk(
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
    b'"role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,'
    b'"usage":{"input_tokens":1,"output_tokens":0}}}\n\n'
)


def openai_stream(base_url: str, proceed: threading.Event, timeout: float = WAIT) -> BaseException:
    client = openai.OpenAI(base_url=base_url, api_key=SECRET, max_retries=0, timeout=timeout)
    try:
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        for _ in stream:
            proceed.set()
    except Exception as exc:
        return exc
    finally:
        proceed.set()
        client.close()
    pytest.fail("the stream ended without an error")


def test_openai_wraps_a_refused_connection() -> None:
    exc = openai_stream(refused_url().rsplit("/", 2)[0], threading.Event())
    facts = transport_facts(exc, headers_received=False)
    assert facts.kind is T.REFUSED
    assert facts.chain == (
        "openai.APIConnectionError",
        "httpx2.ConnectError",
        "httpcore2.ConnectError",
        "builtins.ConnectionRefusedError",
    )
    assert facts.markers == ("errno=ECONNREFUSED", "class=httpx2.ConnectError")


def test_openai_wraps_a_mid_stream_reset() -> None:
    with Peer(send_then(SSE_HEAD + OPENAI_CHUNK, "rst_after_read")) as peer:
        exc = openai_stream(peer.url.rsplit("/", 1)[0], peer.proceed)
    facts = transport_facts(exc, headers_received=True)
    assert facts.kind is T.RESET
    assert facts.chain == (
        "openai.APIConnectionError",
        "httpx2.ReadError",
        "httpcore2.ReadError",
        "builtins.ConnectionResetError",
    )
    assert facts.errno == errno.ECONNRESET


def test_openai_wraps_a_mid_stream_fin() -> None:
    with Peer(send_then(SSE_HEAD + OPENAI_CHUNK, "fin_after_read")) as peer:
        exc = openai_stream(peer.url.rsplit("/", 1)[0], peer.proceed)
    facts = transport_facts(exc, headers_received=True)
    assert facts.kind is T.CLOSED_MID_BODY
    assert facts.chain[:2] == ("openai.APIConnectionError", "httpx2.RemoteProtocolError")


def test_openai_wraps_a_stall_as_a_timeout() -> None:
    with Peer(send_then(SSE_HEAD + OPENAI_CHUNK, "stall")) as peer:
        exc = openai_stream(peer.url.rsplit("/", 1)[0], peer.proceed, timeout=0.3)
    facts = transport_facts(exc, headers_received=True)
    assert facts.kind is T.READ_TIMEOUT
    assert facts.chain[:2] == ("openai.APITimeoutError", "httpx2.ReadTimeout")


def test_anthropic_lets_the_raw_httpx2_error_escape_mid_stream() -> None:
    with Peer(send_then(SSE_HEAD + ANTHROPIC_START, "rst_after_read")) as peer:
        client = anthropic.Anthropic(
            base_url=peer.url.rsplit("/", 2)[0], api_key=SECRET, max_retries=0, timeout=WAIT
        )

        def run() -> None:
            with client.messages.stream(
                model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            ) as s:
                for _ in s:
                    peer.proceed.set()

        try:
            with pytest.raises(httpx2.ReadError) as info:
                run()
        finally:
            peer.proceed.set()
            client.close()
    facts = transport_facts(info.value, headers_received=True)
    assert facts.kind is T.RESET
    assert facts.chain == ("httpx2.ReadError", "httpcore2.ReadError", "builtins.ConnectionResetError")


# -- exact synthetic chains ----------------------------------------------------------------------------------

REQUEST = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")


def raised(make: Callable[[], None]) -> BaseException:
    try:
        make()
    except BaseException as exc:
        return exc
    raise AssertionError("nothing was raised")


def httpcore_style(os_error: OSError, core: type[Exception], outer: type[Exception]) -> BaseException:
    """What httpx does: httpcore raises ``from None`` (the OS error only in ``__context__``); httpx uses
    ``from``."""

    def make() -> None:
        try:
            try:
                raise os_error
            except OSError as exc:
                raise core(str(exc)) from None
        except Exception as exc:
            raise outer(str(exc)) from exc

    return raised(make)


def test_suppressed_context_is_followed() -> None:
    exc = httpcore_style(
        ConnectionResetError(errno.ECONNRESET, f"reset {SECRET}"), httpcore.ReadError, httpx.ReadError
    )
    assert exc.__cause__ is not None
    assert exc.__cause__.__suppress_context__
    assert transport_facts(exc) == TransportFacts(
        T.RESET,
        chain=("httpx.ReadError", "httpcore.ReadError", "builtins.ConnectionResetError"),
        errno=errno.ECONNRESET,
        markers=("errno=ECONNRESET", "class=httpx.ReadError"),
    )


@pytest.mark.parametrize(
    ("os_error", "outer", "kind", "marker"),
    [
        (OSError(errno.EHOSTUNREACH, "no route"), httpx.ConnectError, T.UNREACHABLE, "errno=EHOSTUNREACH"),
        (OSError(errno.ENETUNREACH, "unreachable"), httpx.ConnectError, T.UNREACHABLE, "errno=ENETUNREACH"),
        (BrokenPipeError(errno.EPIPE, "broken pipe"), httpx.WriteError, T.RESET, "errno=EPIPE"),
        (OSError(errno.ECONNREFUSED, "refused"), httpx.ConnectError, T.REFUSED, "errno=ECONNREFUSED"),
        (
            ConnectionResetError("no errno at all"),
            httpx.ReadError,
            T.RESET,
            "class=builtins.ConnectionResetError",
        ),
        (OSError(errno.ETIMEDOUT, "timed out"), httpx.ConnectError, T.CONNECT_TIMEOUT, "errno=ETIMEDOUT"),
        (OSError(errno.ETIMEDOUT, "timed out"), httpx.ReadError, T.READ_TIMEOUT, "errno=ETIMEDOUT"),
    ],
)
def test_errno_decides(os_error: OSError, outer: type[Exception], kind: TransportKind, marker: str) -> None:
    core = getattr(httpcore, outer.__name__)
    facts = transport_facts(httpcore_style(os_error, core, outer))
    assert facts.kind is kind
    assert facts.markers[0] == marker
    assert facts.confidence is Confidence.HIGH
    assert facts.errno == os_error.errno


@pytest.mark.parametrize(("headers", "kind"), [(True, T.READ_TIMEOUT), (False, T.CONNECT_TIMEOUT)])
def test_bare_etimedout_follows_the_headers_fact(headers: bool, kind: TransportKind) -> None:
    facts = transport_facts(OSError(errno.ETIMEDOUT, "timed out"), headers_received=headers)
    assert facts.kind is kind
    assert facts.markers == ("errno=ETIMEDOUT", "headers_received" if headers else "headers_not_received")


def test_dns_and_tls() -> None:
    dns = httpcore_style(
        socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
        httpcore.ConnectError,
        httpx.ConnectError,
    )
    facts = transport_facts(dns)
    assert (facts.kind, facts.markers) == (T.DNS, ("class=socket.gaierror",))
    assert facts.errno is None  # a getaddrinfo code is not an OS errno

    cert = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    facts = transport_facts(httpcore_style(cert, httpcore.ConnectError, httpx.ConnectError))
    assert (facts.kind, facts.markers, facts.errno) == (T.TLS, ("class=ssl.SSLCertVerificationError",), None)


def test_a_tls_eof_is_a_close_not_a_tls_fault() -> None:
    eof = ssl.SSLEOFError(8, "EOF occurred in violation of protocol")
    mid = transport_facts(httpcore_style(eof, httpcore.ReadError, httpx.ReadError), headers_received=True)
    assert (mid.kind, mid.errno) == (T.CLOSED_MID_BODY, None)
    handshake = transport_facts(httpcore_style(eof, httpcore.ConnectError, httpx.ConnectError))
    assert handshake.kind is T.CLOSED_BEFORE_RESPONSE
    assert handshake.markers == ("class=ssl.SSLEOFError", "class=httpx.ConnectError")


def test_context_only_links_without_suppression() -> None:
    def make() -> None:
        try:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "refused")
        except OSError:
            raise httpx2.ConnectError("All connection attempts failed")  # noqa: B904 - implicit context on purpose

    facts = transport_facts(raised(make))
    assert facts.kind is T.REFUSED
    assert facts.chain == ("httpx2.ConnectError", "builtins.ConnectionRefusedError")


def test_a_suppressed_context_beside_an_explicit_cause_is_bookkeeping() -> None:
    """anyio raises ``BrokenResourceError from <OSError>`` inside ``except IndexError`` (asyncio RSTs)."""

    def make() -> None:
        try:
            [].pop()
        except IndexError:
            raise anyio.BrokenResourceError from ConnectionResetError(errno.ECONNRESET, "reset")

    exc = raised(make)
    assert isinstance(exc.__context__, IndexError)
    facts = transport_facts(exc)
    assert facts.chain == ("anyio.BrokenResourceError", "builtins.ConnectionResetError")
    assert facts.kind is T.RESET


def test_a_cycle_terminates() -> None:
    a = httpx.ReadError("a")
    b = httpcore.ReadError("b")
    c = ConnectionResetError(errno.ECONNRESET, "c")
    a.__context__ = b
    b.__context__ = c
    c.__context__ = a
    facts = transport_facts(a)
    assert facts.kind is T.RESET
    assert facts.chain == ("httpx.ReadError", "httpcore.ReadError", "builtins.ConnectionResetError")


def deep_chain(depth_of_cause: int, total: int) -> BaseException:
    links: list[BaseException] = [RuntimeError(f"layer {i}") for i in range(total)]
    links[depth_of_cause] = ConnectionResetError(errno.ECONNRESET, "reset")
    for outer, inner in itertools.pairwise(links):
        outer.__cause__ = inner
    return links[0]


def test_a_deep_chain_is_bounded() -> None:
    near = transport_facts(deep_chain(10, 200))
    assert (near.kind, near.errno) == (T.RESET, errno.ECONNRESET)
    assert len(near.chain) == 16
    far = transport_facts(deep_chain(150, 200))  # beyond the walk's depth bound: not seen
    assert (far.kind, far.errno, far.confidence) == (T.UNKNOWN, None, Confidence.LOW)


def test_exception_groups_are_looked_through() -> None:
    group = BaseExceptionGroup(
        "all attempts to connect failed",
        [asyncio.CancelledError(), ConnectionRefusedError(errno.ECONNREFUSED, "refused")],
    )
    os_error = OSError("all attempts to connect to 127.0.0.1:1 failed")
    os_error.__cause__ = group
    exc = httpcore_style(os_error, httpcore.ConnectError, httpx.ConnectError)
    facts = transport_facts(exc)
    assert facts.kind is T.REFUSED
    assert facts.chain == (
        "httpx.ConnectError",
        "httpcore.ConnectError",
        "builtins.OSError",
        "builtins.ConnectionRefusedError",
    )


def test_a_group_at_the_top_is_looked_through() -> None:
    inner = httpcore_style(ConnectionResetError(errno.ECONNRESET, "r"), httpcore2.ReadError, httpx2.ReadError)
    facts = transport_facts(BaseExceptionGroup("unhandled errors in a TaskGroup", [inner]))
    assert facts.kind is T.RESET
    assert facts.chain[0] == "httpx2.ReadError"


def test_cancellation_alone_is_not_a_transport_fact() -> None:
    facts = transport_facts(asyncio.CancelledError())
    assert facts == TransportFacts(T.UNKNOWN, confidence=Confidence.LOW)


def test_unrelated_exceptions_are_unknown() -> None:
    facts = transport_facts(ValueError(SECRET))
    assert facts == TransportFacts(T.UNKNOWN, chain=("builtins.ValueError",), confidence=Confidence.LOW)


def test_openai_wrapper_around_httpx2() -> None:
    inner = httpcore_style(
        ConnectionResetError(errno.ECONNRESET, "reset"), httpcore2.ReadError, httpx2.ReadError
    )

    def make() -> None:
        raise openai.APIConnectionError(request=REQUEST) from inner

    assert transport_facts(raised(make)) == TransportFacts(
        T.RESET,
        chain=(
            "openai.APIConnectionError",
            "httpx2.ReadError",
            "httpcore2.ReadError",
            "builtins.ConnectionResetError",
        ),
        errno=errno.ECONNRESET,
        markers=("errno=ECONNRESET", "class=httpx2.ReadError"),
    )


def test_anthropic_wrapper_around_a_dns_failure() -> None:
    inner = httpcore_style(
        socket.gaierror(socket.EAI_AGAIN, "Temporary failure"), httpcore2.ConnectError, httpx2.ConnectError
    )

    def make() -> None:
        raise anthropic.APIConnectionError(request=REQUEST) from inner

    assert transport_facts(raised(make)).kind is T.DNS


def test_sdk_wrappers_alone() -> None:
    alone = transport_facts(openai.APIConnectionError(request=REQUEST))
    assert (alone.kind, alone.confidence, alone.markers) == (
        T.UNKNOWN,
        Confidence.MEDIUM,
        ("class=openai.APIConnectionError",),
    )
    timeout = transport_facts(anthropic.APITimeoutError(request=REQUEST), headers_received=True)
    assert (timeout.kind, timeout.confidence) == (T.READ_TIMEOUT, Confidence.MEDIUM)
    assert timeout.markers == ("class=anthropic.APITimeoutError", "headers_received")


@pytest.mark.parametrize(
    ("exc", "headers", "kind", "confidence"),
    [
        (anyio.EndOfStream(), False, T.CLOSED_BEFORE_RESPONSE, Confidence.HIGH),
        (anyio.EndOfStream(), True, T.CLOSED_MID_BODY, Confidence.HIGH),
        (anyio.BrokenResourceError(), None, T.RESET, Confidence.MEDIUM),
        (anyio.ClosedResourceError(), None, T.UNKNOWN, Confidence.MEDIUM),
        (httpx.ReadError(""), None, T.RESET, Confidence.MEDIUM),
        (httpx.ReadTimeout(""), False, T.READ_TIMEOUT, Confidence.HIGH),  # a slow first byte is still a read
        (httpx.WriteTimeout(""), None, T.READ_TIMEOUT, Confidence.MEDIUM),
        (httpx.LocalProtocolError("bad header"), None, T.PROTOCOL, Confidence.HIGH),
        (httpx.ConnectError(""), None, T.UNKNOWN, Confidence.MEDIUM),
        (httpx.TimeoutException(""), False, T.CONNECT_TIMEOUT, Confidence.MEDIUM),
        (TimeoutError(), True, T.READ_TIMEOUT, Confidence.HIGH),
        (TimeoutError(), None, T.READ_TIMEOUT, Confidence.MEDIUM),
        (
            h11.RemoteProtocolError(
                "peer closed connection without sending complete message body (incomplete chunked read)"
            ),
            None,
            T.CLOSED_MID_BODY,
            Confidence.LOW,
        ),
        (
            httpx.RemoteProtocolError("Server disconnected without sending a response."),
            None,
            T.CLOSED_BEFORE_RESPONSE,
            Confidence.LOW,
        ),
        (httpx.RemoteProtocolError("something else"), None, T.PROTOCOL, Confidence.MEDIUM),
    ],
)
def test_single_exceptions(
    exc: BaseException, headers: bool | None, kind: TransportKind, confidence: Confidence
) -> None:
    facts = transport_facts(exc, headers_received=headers)
    assert (facts.kind, facts.confidence) == (kind, confidence)
    assert all(MARKER.fullmatch(m) for m in facts.markers)


def test_subclasses_are_recognised_through_the_mro() -> None:
    class MyReadTimeout(httpx2.ReadTimeout):
        pass

    facts = transport_facts(MyReadTimeout("x"))
    assert facts.kind is T.READ_TIMEOUT
    assert facts.markers == ("class=httpx2.ReadTimeout",)
    assert facts.chain == (
        f"{__name__}.test_subclasses_are_recognised_through_the_mro.<locals>.MyReadTimeout",
    )


# -- no secret ever leaves -----------------------------------------------------------------------------------


def test_a_planted_secret_never_appears_in_the_facts() -> None:
    leaky = [
        httpcore_style(ConnectionResetError(errno.ECONNRESET, SECRET), httpcore.ReadError, httpx.ReadError),
        httpcore_style(socket.gaierror(-2, SECRET), httpcore.ConnectError, httpx.ConnectError),
        httpx.RemoteProtocolError(f"peer closed connection without sending complete message body {SECRET}"),
        httpx.RemoteProtocolError(f"Server disconnected without sending a response. {SECRET}"),
        ExceptionGroup(SECRET, [ValueError(SECRET)]),
    ]
    for exc in leaky:
        for headers in (None, True, False):
            facts = transport_facts(exc, headers_received=headers)
            assert SECRET not in repr(facts)
            assert all(
                SECRET not in str(value) for value in (facts.kind, facts.chain, facts.errno, facts.markers)
            )


def _pool() -> list[Callable[[], BaseException]]:
    return [
        lambda: httpx.ReadError(SECRET),
        lambda: httpx2.RemoteProtocolError(SECRET),
        lambda: httpcore.ConnectError(SECRET),
        lambda: httpcore2.ReadTimeout(SECRET),
        lambda: h11.RemoteProtocolError(SECRET),
        lambda: anyio.EndOfStream(SECRET),
        lambda: anyio.BrokenResourceError(SECRET),
        lambda: OSError(errno.ECONNRESET, SECRET),
        lambda: OSError(errno.ETIMEDOUT, SECRET),
        lambda: socket.gaierror(-2, SECRET),
        lambda: ssl.SSLEOFError(8, SECRET),
        lambda: TimeoutError(SECRET),
        lambda: asyncio.CancelledError(SECRET),
        lambda: openai.APIConnectionError(message=SECRET, request=REQUEST),
        lambda: anthropic.APITimeoutError(request=REQUEST),
        lambda: RuntimeError(SECRET),
    ]


@st.composite
def chains(draw: st.DrawFn) -> BaseException:
    """Random exceptions wired by random cause/context/group links, cycles included."""
    pool = _pool()
    nodes = [pool[i]() for i in draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=12))]
    for i, node in enumerate(nodes):
        link = draw(st.sampled_from(["cause", "context", "suppressed", "group", "none"]))
        target = nodes[draw(st.integers(0, len(nodes) - 1))]
        if link == "cause":
            node.__cause__ = target
        elif link in ("context", "suppressed"):
            node.__context__ = target
            node.__suppress_context__ = link == "suppressed"
        elif link == "group":
            nodes[i] = BaseExceptionGroup(SECRET, [node, target])
    return nodes[0]


@given(chains(), st.sampled_from([None, True, False]))
def test_any_chain_gives_bounded_facts_without_secrets(exc: BaseException, headers: bool | None) -> None:
    facts = transport_facts(exc, headers_received=headers)
    assert isinstance(facts.kind, TransportKind)
    assert len(facts.chain) <= 16
    assert all(MARKER.fullmatch(m) for m in facts.markers), facts.markers
    assert SECRET not in repr(facts)
    assert facts.confidence is not Confidence.HIGH or facts.kind is not T.UNKNOWN


@pytest.mark.parametrize("exc", [ValueError("unparseable"), KeyError("x"), RuntimeError("sdk internals")])
def test_an_error_no_transport_knows_is_never_safe_to_retry_on_its_own(exc: Exception) -> None:
    # DESIGN §12: what is not recognised is said so, never called transient. Before any output a known
    # transport fault is safe to retry automatically; an exception of no transport may be deterministic.
    from streamfsm.classify import Facts, Verdict, diagnose
    from streamfsm.machine import Activity, Commitment, State, Trigger

    facts = transport_facts(exc, headers_received=True)
    assert facts.kind is TransportKind.UNKNOWN
    early = State(Activity.STREAMING, Commitment.NONE)
    unknown = diagnose(early, Trigger.DISCONNECTED, Facts(transport=facts))
    assert unknown.verdict is Verdict.USER_CONFIRMED_RETRY
    assert "does not recognise" in unknown.reason
    known = transport_facts(ConnectionResetError(errno.ECONNRESET, "reset"), headers_received=True)
    assert diagnose(early, Trigger.DISCONNECTED, Facts(transport=known)).verdict is Verdict.SAFE_AUTO_RETRY
