"""An exception chain becomes transport facts: what happened to the connection, and how sure we are.

The whole chain is walked, not just the outermost exception. httpx wraps httpcore, which raises ``from None``,
so the OS error that tells the story (ECONNRESET, ECONNREFUSED) is reachable only through a suppressed
``__context__``; anyio and trio add layers of their own (BrokenResourceError, ExceptionGroup, the
cancellation a deadline leaves behind). Foreign classes are recognised by qualified name, through their MRO,
so this module imports none of httpx/httpx2, httpcore/httpcore2, h11, anyio, trio, openai or anthropic.

Decision order, the first rule that applies wins:

1. ``socket.gaierror`` anywhere: dns. ``ssl.SSLError`` anywhere: tls (but not its EOF variants: those are
   closes).
2. The deepest OS error with a telling errno or class: refused, reset, unreachable, or a timeout.
3. The most specific library class: ConnectTimeout/ReadTimeout/RemoteProtocolError/... before anyio/trio
   stream errors, before generic ReadError/ConnectError/ProtocolError, before SDK wrappers.
4. Message text, only to split a RemoteProtocolError: when the caller could not say whether headers arrived,
   and after the headers, a malformed transfer (h11's "illegal chunk header") from a close mid-body.
   A ``DecodingError`` (a corrupt gzip or brotli body) is its own kind, ``decoding``: not a lost connection.

Confidence is HIGH when a specific type, an errno or the caller's ``headers_received`` decided; MEDIUM when
only a generic type did; LOW when message text did or nothing was recognised. Markers name the deciding facts
from a fixed vocabulary (``class=…``, ``errno=…``, ``headers_received``, ``message=…``); exception messages
never leave this module.
"""

from __future__ import annotations

import enum
import errno as _errno
from dataclasses import dataclass
from typing import Final

from ._taxonomy import Confidence, TransportFacts, TransportKind

__all__ = ["transport_facts"]

MAX_DEPTH: Final = 16  # links followed from the outermost exception
MAX_NODES: Final = 64  # exceptions visited in all (groups fan out)
MAX_CHAIN: Final = 16  # names reported
_MAX_GROUP_MEMBERS: Final = 8
_MAX_NAME: Final = 120
_MAX_MESSAGE: Final = 300


class _Role(enum.Enum):
    CONNECT_TIMEOUT = "connect_timeout"
    READ_TIMEOUT = "read_timeout"
    WRITE_TIMEOUT = "write_timeout"
    POOL_TIMEOUT = "pool_timeout"
    REMOTE_PROTOCOL = "remote_protocol"
    H11_REMOTE_PROTOCOL = "h11_remote_protocol"
    LOCAL_PROTOCOL = "local_protocol"
    EOF = "eof"  # the peer closed cleanly (FIN, TLS close) where more was expected
    BROKEN_RESOURCE = "broken_resource"
    BARE_TIMEOUT = "bare_timeout"  # builtins.TimeoutError without errno, trio.TooSlowError
    READ_ERROR = "read_error"
    WRITE_ERROR = "write_error"
    PROTOCOL = "protocol"
    TIMEOUT = "timeout"
    CONNECT_ERROR = "connect_error"
    CLOSED_RESOURCE = "closed_resource"  # our own side used a closed stream
    NETWORK = "network"
    SDK_TIMEOUT = "sdk_timeout"
    SDK_CONNECTION = "sdk_connection"
    DECODING = "decoding"
    DNS = "dns"
    TLS = "tls"
    ARTEFACT = "artefact"  # cancellation left behind by a deadline or scope: never the cause
    GROUP = "group"  # an exception group: looked through, not reported


_HTTP_FAMILIES: Final = ("httpx", "httpx2", "httpcore", "httpcore2")
_HTTP_CLASSES: Final = {
    "ConnectTimeout": _Role.CONNECT_TIMEOUT,
    "ReadTimeout": _Role.READ_TIMEOUT,
    "WriteTimeout": _Role.WRITE_TIMEOUT,
    "PoolTimeout": _Role.POOL_TIMEOUT,
    "TimeoutException": _Role.TIMEOUT,
    "ConnectError": _Role.CONNECT_ERROR,
    "ReadError": _Role.READ_ERROR,
    "WriteError": _Role.WRITE_ERROR,
    "CloseError": _Role.NETWORK,
    "NetworkError": _Role.NETWORK,
    "RemoteProtocolError": _Role.REMOTE_PROTOCOL,
    "LocalProtocolError": _Role.LOCAL_PROTOCOL,
    "ProtocolError": _Role.PROTOCOL,
    "DecodingError": _Role.DECODING,
    "ProxyError": _Role.NETWORK,
    "UnsupportedProtocol": _Role.NETWORK,
    "TransportError": _Role.NETWORK,
}
# (top-level module, class qualname) -> role; a class is matched through its MRO, most derived first.
_ROLES: Final[dict[tuple[str, str], _Role]] = {
    **{(family, name): role for family in _HTTP_FAMILIES for name, role in _HTTP_CLASSES.items()},
    ("h11", "RemoteProtocolError"): _Role.H11_REMOTE_PROTOCOL,
    # boto3 (Bedrock ConverseStream through wrap()) reads over urllib3; botocore wraps some of its errors
    ("urllib3", "ProtocolError"): _Role.REMOTE_PROTOCOL,  # "Response ended prematurely", IncompleteRead
    ("urllib3", "ReadTimeoutError"): _Role.READ_TIMEOUT,
    ("urllib3", "ConnectTimeoutError"): _Role.CONNECT_TIMEOUT,
    ("urllib3", "NewConnectionError"): _Role.CONNECT_ERROR,
    ("botocore", "ReadTimeoutError"): _Role.READ_TIMEOUT,
    ("botocore", "ConnectTimeoutError"): _Role.CONNECT_TIMEOUT,
    ("botocore", "EndpointConnectionError"): _Role.CONNECT_ERROR,
    ("botocore", "ConnectionClosedError"): _Role.REMOTE_PROTOCOL,
    ("h11", "LocalProtocolError"): _Role.LOCAL_PROTOCOL,
    ("h11", "ProtocolError"): _Role.PROTOCOL,
    ("anyio", "EndOfStream"): _Role.EOF,
    ("anyio", "IncompleteRead"): _Role.EOF,
    ("anyio", "BrokenResourceError"): _Role.BROKEN_RESOURCE,
    ("anyio", "ClosedResourceError"): _Role.CLOSED_RESOURCE,
    ("trio", "BrokenResourceError"): _Role.BROKEN_RESOURCE,
    ("trio", "ClosedResourceError"): _Role.CLOSED_RESOURCE,
    ("trio", "TooSlowError"): _Role.BARE_TIMEOUT,
    ("trio", "Cancelled"): _Role.ARTEFACT,
    ("asyncio", "CancelledError"): _Role.ARTEFACT,
    ("builtins", "GeneratorExit"): _Role.ARTEFACT,
    ("builtins", "BaseExceptionGroup"): _Role.GROUP,
    ("exceptiongroup", "BaseExceptionGroup"): _Role.GROUP,
    ("trio", "MultiError"): _Role.GROUP,
    ("openai", "APITimeoutError"): _Role.SDK_TIMEOUT,
    ("openai", "APIConnectionError"): _Role.SDK_CONNECTION,
    ("anthropic", "APITimeoutError"): _Role.SDK_TIMEOUT,
    ("anthropic", "APIConnectionError"): _Role.SDK_CONNECTION,
    ("socket", "gaierror"): _Role.DNS,
    ("socket", "herror"): _Role.DNS,
    ("ssl", "SSLEOFError"): _Role.EOF,  # the peer closed the TLS stream: a close, not a TLS fault
    ("ssl", "SSLZeroReturnError"): _Role.EOF,
    ("ssl", "SSLCertVerificationError"): _Role.TLS,
    ("ssl", "SSLError"): _Role.TLS,
    ("builtins", "TimeoutError"): _Role.BARE_TIMEOUT,  # also socket.timeout; with ETIMEDOUT rule 2 decides
}
# Role precedence in rule 3; equal ranks go to the outermost exception.
_RANK: Final = {
    _Role.CONNECT_TIMEOUT: 0,
    _Role.READ_TIMEOUT: 0,
    _Role.WRITE_TIMEOUT: 0,
    _Role.POOL_TIMEOUT: 0,
    _Role.REMOTE_PROTOCOL: 0,
    _Role.H11_REMOTE_PROTOCOL: 0,
    _Role.LOCAL_PROTOCOL: 0,
    _Role.DECODING: 0,
    _Role.EOF: 1,
    _Role.BROKEN_RESOURCE: 1,
    _Role.BARE_TIMEOUT: 1,
    _Role.READ_ERROR: 2,
    _Role.WRITE_ERROR: 2,
    _Role.PROTOCOL: 2,
    _Role.TIMEOUT: 2,
    _Role.CONNECT_ERROR: 2,
    _Role.CLOSED_RESOURCE: 3,
    _Role.NETWORK: 3,
    _Role.SDK_TIMEOUT: 4,
    _Role.SDK_CONNECTION: 4,
}
_CONNECT_ROLES: Final = frozenset({_Role.CONNECT_TIMEOUT, _Role.CONNECT_ERROR, _Role.POOL_TIMEOUT})
_READ_ROLES: Final = frozenset({_Role.READ_TIMEOUT, _Role.READ_ERROR, _Role.WRITE_TIMEOUT, _Role.WRITE_ERROR})
_NOT_REPORTED: Final = frozenset({_Role.ARTEFACT, _Role.GROUP})

_TIMED_OUT: Final = "timed_out"  # an OS timeout, resolved to connect or read by the chain around it


def _errnos(names: tuple[str, ...]) -> frozenset[int]:
    return frozenset(v for v in (getattr(_errno, n, None) for n in names) if isinstance(v, int))


_ERRNO_KIND: Final[dict[int, TransportKind | str]] = {
    **dict.fromkeys(_errnos(("ECONNREFUSED", "WSAECONNREFUSED")), TransportKind.REFUSED),
    **dict.fromkeys(
        _errnos(("ECONNRESET", "EPIPE", "ECONNABORTED", "ESHUTDOWN", "WSAECONNRESET", "WSAECONNABORTED")),
        TransportKind.RESET,
    ),
    **dict.fromkeys(
        _errnos(
            ("EHOSTUNREACH", "ENETUNREACH", "ENETDOWN", "EHOSTDOWN", "WSAEHOSTUNREACH", "WSAENETUNREACH")
        ),
        TransportKind.UNREACHABLE,
    ),
    **dict.fromkeys(_errnos(("ETIMEDOUT", "WSAETIMEDOUT")), _TIMED_OUT),
}
# OS error classes that decide even without an errno (Python picks them from errno, or code raises them bare).
_OS_CLASS_KIND: Final[tuple[tuple[type[OSError], TransportKind], ...]] = (
    (ConnectionRefusedError, TransportKind.REFUSED),
    (ConnectionResetError, TransportKind.RESET),
    (ConnectionAbortedError, TransportKind.RESET),
    (BrokenPipeError, TransportKind.RESET),
)

# Last-resort phrases in a RemoteProtocolError (httpcore's and h11's own wording).
_NO_RESPONSE_PHRASES: Final = ("without sending a response",)
_INCOMPLETE_BODY_PHRASES: Final = ("incomplete chunked read", "without sending complete message body")
# h11's wording for a body it could not parse (as opposed to one cut short).
_MALFORMED_BODY_PHRASES: Final = ("illegal chunk", "chunk header", "chunk size", "invalid chunk")


@dataclass(frozen=True, slots=True)
class _Node:
    exc: BaseException
    depth: int
    name: str  # module.qualname as raised, for the chain
    role: _Role | None
    label: str  # "<top-level module>.<class>" of the class that gave the role, for markers


@dataclass(frozen=True, slots=True)
class _Decision:
    kind: TransportKind
    markers: tuple[str, ...]
    confidence: Confidence


def _classify_type(exc: BaseException) -> tuple[_Role | None, str]:
    for klass in type(exc).__mro__:
        top = str(getattr(klass, "__module__", "") or "").partition(".")[0]
        role = _ROLES.get((top, klass.__qualname__))
        if role is not None:
            return role, f"{top}.{klass.__qualname__}"
    return None, ""


def _qualified_name(exc: BaseException) -> str:
    klass = type(exc)
    return f"{getattr(klass, '__module__', '?')}.{klass.__qualname__}"[:_MAX_NAME]


def _members(exc: BaseException, role: _Role | None) -> list[BaseException]:
    if role is not _Role.GROUP:
        return []
    try:
        members = getattr(exc, "exceptions", ())
    except Exception:
        return []
    if not isinstance(members, (tuple, list)):
        return []
    return [m for m in members[:_MAX_GROUP_MEMBERS] if isinstance(m, BaseException)]


def _walk(exc: BaseException) -> list[_Node]:
    """Depth-first, outermost first: a group's members, then ``__cause__``, then ``__context__``.

    A suppressed context is followed when there is no cause (httpcore raises ``from None``, hiding the OS
    error there), but not next to an explicit cause: anyio raises ``BrokenResourceError from <OSError>``
    inside ``except IndexError``, and that IndexError is bookkeeping, not part of the story (measured).
    Cycles, depth and group fan-out are bounded."""
    nodes: list[_Node] = []
    seen: set[int] = set()
    stack: list[tuple[BaseException, int]] = [(exc, 0)]
    while stack and len(nodes) < MAX_NODES:
        current, depth = stack.pop()
        if id(current) in seen or depth > MAX_DEPTH:
            continue
        seen.add(id(current))
        role, label = _classify_type(current)
        nodes.append(_Node(current, depth, _qualified_name(current), role, label))
        children = _members(current, role)
        cause = current.__cause__
        context = None if cause is not None and current.__suppress_context__ else current.__context__
        for link in (cause, context):
            if link is not None and all(link is not c for c in children):
                children.append(link)
        stack.extend((child, depth + 1) for child in reversed(children))
    return nodes


def _os_fact(exc: BaseException) -> tuple[TransportKind | str, str] | None:
    """What one OS error says on its own, with its marker; None when it says nothing telling."""
    if not isinstance(exc, OSError):
        return None
    code = exc.errno
    if isinstance(code, int) and code in _ERRNO_KIND:
        return _ERRNO_KIND[code], f"errno={_errno.errorcode.get(code, str(code))}"
    for klass, kind in _OS_CLASS_KIND:
        if isinstance(exc, klass):
            return kind, f"class=builtins.{klass.__qualname__}"
    return None


def _deepest_errno(nodes: list[_Node]) -> int | None:
    best: tuple[int, int] | None = None  # (depth, errno)
    for node in nodes:
        if node.role in (_Role.TLS, _Role.DNS, _Role.EOF) and node.label.startswith(("ssl.", "socket.")):
            continue  # their errno is an SSL or getaddrinfo code, not an OS errno
        exc = node.exc
        if isinstance(exc, OSError) and isinstance(exc.errno, int) and (best is None or node.depth > best[0]):
            best = (node.depth, exc.errno)
    return None if best is None else best[1]


def _first(nodes: list[_Node], roles: frozenset[_Role]) -> _Node | None:
    return next((n for n in nodes if n.role in roles), None)


def _headers_marker(headers_received: bool) -> str:
    return "headers_received" if headers_received else "headers_not_received"


def _timeout(
    nodes: list[_Node], headers_received: bool | None, decided: tuple[str, ...], confidence: Confidence
) -> _Decision:
    """A timeout that does not say which: the library class around it does, then the caller's headers fact."""
    connect = _first(nodes, _CONNECT_ROLES)
    if connect is not None:
        return _Decision(TransportKind.CONNECT_TIMEOUT, (*decided, f"class={connect.label}"), confidence)
    read = _first(nodes, _READ_ROLES)
    if read is not None:
        return _Decision(TransportKind.READ_TIMEOUT, (*decided, f"class={read.label}"), confidence)
    if headers_received is not None:
        kind = TransportKind.READ_TIMEOUT if headers_received else TransportKind.CONNECT_TIMEOUT
        return _Decision(kind, (*decided, _headers_marker(headers_received)), confidence)
    # Nothing says whether a connection existed; "read" does not claim the request never left.
    return _Decision(TransportKind.READ_TIMEOUT, (*decided, "headers_unknown"), Confidence.MEDIUM)


def _closed(nodes: list[_Node], headers_received: bool | None, node: _Node) -> _Decision:
    marker = f"class={node.label}"
    if headers_received is not None:
        kind = TransportKind.CLOSED_MID_BODY if headers_received else TransportKind.CLOSED_BEFORE_RESPONSE
        return _Decision(kind, (marker, _headers_marker(headers_received)), Confidence.HIGH)
    connect = _first(nodes, _CONNECT_ROLES)
    if connect is not None:
        return _Decision(
            TransportKind.CLOSED_BEFORE_RESPONSE, (marker, f"class={connect.label}"), Confidence.HIGH
        )
    return _Decision(TransportKind.CLOSED_MID_BODY, (marker, "headers_unknown"), Confidence.MEDIUM)


def _message(exc: BaseException) -> str:
    try:
        return str(exc)[:_MAX_MESSAGE].lower()
    except Exception:
        return ""


def _malformed_body(node: _Node) -> bool:
    text = _message(node.exc)
    return any(p in text for p in _MALFORMED_BODY_PHRASES) and not any(
        p in text for p in _INCOMPLETE_BODY_PHRASES
    )


def _remote_protocol(nodes: list[_Node], headers_received: bool | None, node: _Node) -> _Decision:
    """The peer broke HTTP: closed before a response, closed mid-body, or sent something malformed.

    h11 raises mid-body closes and malformed input; httpcore raises "Server disconnected without sending a
    response" itself, with no h11 error beneath (measured, §7 of the design)."""
    marker = f"class={node.label}"
    h11 = _first(nodes, frozenset({_Role.H11_REMOTE_PROTOCOL}))
    if headers_received is True:
        # h11 raises both a close mid-body and a malformed body (a bad chunk header) this way; only its
        # wording tells them apart, so a malformed transfer is said with MEDIUM confidence.
        if h11 is not None and _malformed_body(h11):
            return _Decision(
                TransportKind.PROTOCOL,
                (marker, f"class={h11.label}", "headers_received", "message=malformed_body"),
                Confidence.MEDIUM,
            )
        return _Decision(TransportKind.CLOSED_MID_BODY, (marker, "headers_received"), Confidence.HIGH)
    if headers_received is False:
        if h11 is not None:  # h11 rejected the status line or headers
            return _Decision(
                TransportKind.PROTOCOL,
                (marker, f"class={h11.label}", "headers_not_received"),
                Confidence.HIGH,
            )
        return _Decision(
            TransportKind.CLOSED_BEFORE_RESPONSE, (marker, "headers_not_received"), Confidence.HIGH
        )
    # The caller does not know: fall back to the libraries' wording, and say so.
    texts = [_message(n.exc) for n in nodes if n.role in (_Role.REMOTE_PROTOCOL, _Role.H11_REMOTE_PROTOCOL)]
    if any(p in t for t in texts for p in _NO_RESPONSE_PHRASES):
        return _Decision(
            TransportKind.CLOSED_BEFORE_RESPONSE, (marker, "message=no_response"), Confidence.LOW
        )
    if any(p in t for t in texts for p in _INCOMPLETE_BODY_PHRASES):
        return _Decision(TransportKind.CLOSED_MID_BODY, (marker, "message=incomplete_body"), Confidence.LOW)
    extra = (f"class={h11.label}",) if h11 is not None and h11 is not node else ()
    return _Decision(TransportKind.PROTOCOL, (marker, *extra), Confidence.MEDIUM)


_DIRECT: Final = {
    _Role.CONNECT_TIMEOUT: (TransportKind.CONNECT_TIMEOUT, Confidence.HIGH),
    _Role.READ_TIMEOUT: (TransportKind.READ_TIMEOUT, Confidence.HIGH),
    # The taxonomy has no write or pool timeout: a stalled upload is a stalled exchange, and a pool timeout
    # means no connection was had in time.
    _Role.WRITE_TIMEOUT: (TransportKind.READ_TIMEOUT, Confidence.MEDIUM),
    _Role.POOL_TIMEOUT: (TransportKind.CONNECT_TIMEOUT, Confidence.MEDIUM),
    _Role.LOCAL_PROTOCOL: (TransportKind.PROTOCOL, Confidence.HIGH),
    _Role.DECODING: (TransportKind.DECODING, Confidence.HIGH),
    _Role.BROKEN_RESOURCE: (TransportKind.RESET, Confidence.MEDIUM),
    _Role.READ_ERROR: (TransportKind.RESET, Confidence.MEDIUM),  # a failed recv is a reset in practice
    _Role.WRITE_ERROR: (TransportKind.RESET, Confidence.MEDIUM),
    _Role.PROTOCOL: (TransportKind.PROTOCOL, Confidence.MEDIUM),
    _Role.CONNECT_ERROR: (TransportKind.UNKNOWN, Confidence.MEDIUM),
    _Role.CLOSED_RESOURCE: (TransportKind.UNKNOWN, Confidence.MEDIUM),
    _Role.NETWORK: (TransportKind.UNKNOWN, Confidence.MEDIUM),
    _Role.SDK_CONNECTION: (TransportKind.UNKNOWN, Confidence.MEDIUM),
}


def _by_role(nodes: list[_Node], headers_received: bool | None) -> _Decision | None:
    ranked = [(_RANK[n.role], i, n, n.role) for i, n in enumerate(nodes) if n.role in _RANK]
    if not ranked:
        return None
    _, _, node, role = min(ranked)  # the index breaks ties: the outermost wins
    marker = f"class={node.label}"
    if role in (_Role.REMOTE_PROTOCOL, _Role.H11_REMOTE_PROTOCOL):
        return _remote_protocol(nodes, headers_received, node)
    if role is _Role.EOF:
        return _closed(nodes, headers_received, node)
    if role is _Role.BARE_TIMEOUT:
        return _timeout(nodes, headers_received, (marker,), Confidence.HIGH)
    if role in (_Role.TIMEOUT, _Role.SDK_TIMEOUT):
        return _timeout(nodes, headers_received, (marker,), Confidence.MEDIUM)
    kind, confidence = _DIRECT.get(role, (TransportKind.UNKNOWN, Confidence.LOW))
    return _Decision(kind, (marker,), confidence)


def _outer_transport_marker(nodes: list[_Node]) -> tuple[str, ...]:
    """The outermost library class, as context for a decision taken deeper down."""
    sdk = (_Role.SDK_CONNECTION, _Role.SDK_TIMEOUT)
    node = next((n for n in nodes if n.role in _RANK and n.role not in sdk), None)
    return () if node is None else (f"class={node.label}",)


def _decide(nodes: list[_Node], headers_received: bool | None) -> _Decision:
    # 1. Name resolution and TLS are unambiguous wherever they sit.
    for role, named in ((_Role.DNS, TransportKind.DNS), (_Role.TLS, TransportKind.TLS)):
        node = _first(nodes, frozenset({role}))
        if node is not None:
            return _Decision(named, (f"class={node.label}",), Confidence.HIGH)
    # 2. The deepest OS error that says something.
    deepest: tuple[_Node, TransportKind | str, str] | None = None
    for node in nodes:
        fact = _os_fact(node.exc)
        if fact is not None and (deepest is None or node.depth > deepest[0].depth):
            deepest = (node, *fact)
    if deepest is not None:
        _, kind, marker = deepest
        if isinstance(kind, TransportKind):
            return _Decision(kind, (marker, *_outer_transport_marker(nodes)), Confidence.HIGH)
        return _timeout(nodes, headers_received, (marker,), Confidence.HIGH)
    # 3. Library classes, most specific first.
    decision = _by_role(nodes, headers_received)
    if decision is not None:
        return decision
    return _Decision(TransportKind.UNKNOWN, (), Confidence.LOW)


def transport_facts(exc: BaseException, *, headers_received: bool | None = None) -> TransportFacts:
    """Classify a transport failure from its exception chain.

    ``headers_received`` is the caller's own knowledge of whether response headers had arrived; when given it
    is preferred over anything the exceptions' wording suggests.
    """
    nodes = _walk(exc)
    decision = _decide(nodes, headers_received)
    chain = tuple(n.name for n in nodes if n.role not in _NOT_REPORTED)[:MAX_CHAIN]
    return TransportFacts(
        kind=decision.kind,
        chain=chain,
        errno=_deepest_errno(nodes),
        markers=tuple(dict.fromkeys(decision.markers)),
        confidence=decision.confidence,
    )
