"""Fault scripts as data: what the fault server does, step by step, for one request.

A script is a tuple of steps played in order on one connection, after the whole request has been read::

    (Headers(), Send(b"data: 1\\n\\n"), Sleep(0.05), Rst())    # one event, then the peer sees ECONNRESET
    (Status(429, (("retry-after", "2"),), b"{}"),)           # a complete error response
    (Stall(),)                                                # stall before headers

The rules, checked by `check_script` (and so by `Scenario`):

* `Status` and `Headers` start the response, once, before any body step; `Send`, `Keepalive` and `End` need
  `Headers` first.
* `Fin`, `Rst` and `Stall` end the connection: nothing may follow them.
* `Sleep` and `SendRaw` may appear anywhere; `SendRaw` bypasses all framing, so a connection that used it is
  never reused.
* When the script runs out, the server closes the connection (a FIN), unless the response was complete
  (`End`, or `Status(close=False)`) and the client did not ask to close: then it reads the next request on the
  same connection. A script that runs out mid-body is therefore "FIN without the terminating chunk".

Connection refused is not a step: point the client at `unused_port()` instead.

A WebSocket script (OpenAI Responses' WebSocket mode) opens with `Upgrade` instead: the 101 handshake, then
the client's first message is read. After it `Send` is one text message, `NextCreate` waits for the client's
next message (the next ``response.create``), `Close` sends a close frame (with a code, or without one), and
`Fin`, `Rst`, `Stall` and `Sleep` mean what they mean over HTTP. A WebSocket script that runs out holds the
connection open until the client closes it.
"""

from __future__ import annotations

import enum
import math
import socket
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from types import MappingProxyType
from typing import TypeAlias, TypeVar

from ..classify import AbortSource, Action, FailureClass, Phase, Verdict
from ..machine import Trigger

__all__ = [
    "Agent",
    "End",
    "Fin",
    "Headers",
    "Keepalive",
    "NextCreate",
    "Rst",
    "Scenario",
    "Script",
    "ScriptError",
    "Send",
    "SendRaw",
    "Sleep",
    "Stall",
    "Status",
    "Step",
    "Upgrade",
    "WsClose",
    "check_script",
    "cut_chunk",
    "encode_chunk",
    "unused_port",
]

HeaderPairs: TypeAlias = tuple[tuple[str, str], ...]


class ScriptError(ValueError):
    """A step or script that the server could not play as written."""


def _header_pairs(headers: Iterable[tuple[str, str]]) -> HeaderPairs:
    pairs = tuple((str(name), str(value)) for name, value in headers)
    for name, value in pairs:
        # A CR or LF here would silently forge framing: malformed bytes belong in SendRaw, where they show.
        if not name or any(c in name for c in "\r\n: \t") or "\r" in value or "\n" in value:
            raise ScriptError(f"invalid header {name!r}: {value!r}")
    return pairs


def _check_code(code: int) -> None:
    if not 100 <= code <= 999:
        raise ScriptError(f"status code must have three digits, got {code!r}")


@dataclass(frozen=True, slots=True)
class Status:
    """A complete, non-streaming response (with Content-Length); by default the connection closes after it."""

    code: int
    headers: HeaderPairs = ()
    body: bytes = b""
    close: bool = True

    def __post_init__(self) -> None:
        _check_code(self.code)
        object.__setattr__(self, "headers", _header_pairs(self.headers))


@dataclass(frozen=True, slots=True)
class Headers:
    """Start a chunked streaming response: status line and headers (``transfer-encoding: chunked`` added)."""

    code: int = 200
    headers: HeaderPairs = (("content-type", "text/event-stream"),)

    def __post_init__(self) -> None:
        _check_code(self.code)
        object.__setattr__(self, "headers", _header_pairs(self.headers))


@dataclass(frozen=True, slots=True)
class Send:
    """One HTTP chunk carrying ``data`` (typically one SSE frame)."""

    data: bytes

    def __post_init__(self) -> None:
        if not self.data:
            # An empty chunk is the terminating chunk: say End() when that is what is meant.
            raise ScriptError("Send needs a non-empty payload; use End() for the terminating chunk")


@dataclass(frozen=True, slots=True)
class SendRaw:
    """Raw bytes on the socket, outside any framing (a cut-short chunk, a bad chunk header, garbage)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Sleep:
    """Do nothing for ``seconds`` (the connection stays open and silent)."""

    seconds: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.seconds) and self.seconds >= 0):
            raise ScriptError(f"Sleep needs a finite, non-negative duration, got {self.seconds!r}")


@dataclass(frozen=True, slots=True)
class Fin:
    """Shut down the write side, then close, without the terminating chunk: the peer sees a clean EOF."""


@dataclass(frozen=True, slots=True)
class Rst:
    """Close with SO_LINGER (1, 0): the peer sees ECONNRESET."""


@dataclass(frozen=True, slots=True)
class Stall:
    """Hold the connection open doing nothing until the client goes away or the server stops."""


@dataclass(frozen=True, slots=True)
class End:
    """The terminating ``0\\r\\n\\r\\n`` chunk: a clean end of the body."""


@dataclass(frozen=True, slots=True)
class Keepalive:
    """``count`` times: wait ``every`` seconds, then send ``frame`` as one chunk (a stall kept alive)."""

    every: float
    count: int
    frame: bytes = b": keepalive\n\n"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.every) and self.every >= 0):
            raise ScriptError(f"Keepalive needs a finite, non-negative period, got {self.every!r}")
        if self.count < 0:
            raise ScriptError(f"Keepalive needs a non-negative count, got {self.count!r}")
        if not self.frame:
            raise ScriptError("Keepalive needs a non-empty frame")


@dataclass(frozen=True, slots=True)
class Upgrade:
    """Accept a WebSocket upgrade (101), then read the client's first message: the script is a WebSocket's."""


@dataclass(frozen=True, slots=True)
class NextCreate:
    """On a WebSocket: wait for the client's next message (the next response's ``response.create``)."""


@dataclass(frozen=True, slots=True)
class WsClose:
    """On a WebSocket: a close frame with ``code`` (None: a close frame without a code), then the server
    waits (bounded) for the client's own close frame and closes the socket."""

    code: int | None = 1000
    reason: str = ""

    def __post_init__(self) -> None:
        if (self.code is not None and not 1000 <= self.code <= 4999) or (self.code is None and self.reason):
            raise ScriptError(f"WsClose needs a code in 1000-4999 (a reason needs a code), got {self.code!r}")


Step: TypeAlias = (
    Status
    | Headers
    | Send
    | SendRaw
    | Sleep
    | Fin
    | Rst
    | Stall
    | End
    | Keepalive
    | Upgrade
    | NextCreate
    | WsClose
)
Script: TypeAlias = tuple[Step, ...]

_STEP_TYPES = (
    Status,
    Headers,
    Send,
    SendRaw,
    Sleep,
    Fin,
    Rst,
    Stall,
    End,
    Keepalive,
    Upgrade,
    NextCreate,
    WsClose,
)


def check_script(steps: Iterable[Step]) -> Script:
    """Return ``steps`` as a tuple, or raise `ScriptError` naming the first step that cannot be played."""
    script = tuple(steps)
    phase = "before response"  # -> "streaming" -> "complete"; or -> "websocket" -> "websocket closed"
    for index, step in enumerate(script):
        where = f"step {index} ({step!r})"
        if not isinstance(step, _STEP_TYPES):
            raise ScriptError(f"{where} is not a script step")
        if index and isinstance(script[index - 1], Fin | Rst | Stall):
            raise ScriptError(f"{where} follows {script[index - 1]!r}, which ends the connection")
        if isinstance(step, Status | Headers | Upgrade):
            if phase != "before response":
                raise ScriptError(f"{where}: the response has already started")
            phases = {Status: "complete", Headers: "streaming", Upgrade: "websocket"}
            phase = phases[type(step)]
        elif isinstance(step, NextCreate | WsClose | SendRaw) and phase.startswith("websocket"):
            if phase == "websocket closed" and not isinstance(step, SendRaw):
                raise ScriptError(f"{where} follows the close frame")
            if isinstance(step, WsClose):
                phase = "websocket closed"
        elif isinstance(step, NextCreate | WsClose):
            raise ScriptError(f"{where} needs a WebSocket (Upgrade first)")
        elif isinstance(step, Send) and phase.startswith("websocket"):
            if phase == "websocket closed":
                raise ScriptError(f"{where} follows the close frame")
        elif isinstance(step, Send | Keepalive | End):
            if phase != "streaming":
                raise ScriptError(f"{where} needs an open chunked body (Headers first, End not yet sent)")
            if isinstance(step, End):
                phase = "complete"
    return script


_EFFECTS = ("effectful", "read_only")

_E = TypeVar("_E", bound=enum.Enum)


def _coerce(kind: type[_E], value: _E | str | None, name: str) -> _E | None:
    # Enums inside the code; plain strings accepted from data written by hand (they are the enum values).
    if value is None or isinstance(value, kind):
        return value
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(str(member.value) for member in kind)
        raise ScriptError(f"{name} must be one of {choices}; got {value!r}") from None


@dataclass(frozen=True, slots=True)
class Agent:
    """The part the agent plays while a scenario streams: what the code reading the stream does.

    * ``tools``: tool name → declared effect (``"effectful"`` or ``"read_only"``). When a complete
      ``ToolCall`` for a listed tool arrives, the agent calls ``run.tool_started(call_id, effect)``; calls to
      tools not listed are left alone (the tool never starts).
    * ``abort_on``: on the first event driving this trigger, ``run.abort(abort_reason, source=abort_source)``.
    * ``cancel_on``: on the first such event, cancel the scope around the run from outside (the run only sees
      a cancellation).
    * ``stop_on``: leave the ``async for`` loop early (``break``).
    * ``raise_on``: raise an error of the agent's own inside the loop.
    """

    tools: Mapping[str, str] = field(default_factory=dict, hash=False)
    abort_on: Trigger | None = None
    abort_source: AbortSource = AbortSource.USER
    abort_reason: str | None = None
    cancel_on: Trigger | None = None
    stop_on: Trigger | None = None
    raise_on: Trigger | None = None

    def __post_init__(self) -> None:
        tools = dict(self.tools)
        for name, effect in tools.items():
            if effect not in _EFFECTS:
                raise ScriptError(f"tool {name!r}: effect must be 'effectful' or 'read_only', not {effect!r}")
        object.__setattr__(self, "tools", MappingProxyType(tools))
        for name in ("abort_on", "cancel_on", "stop_on", "raise_on"):
            object.__setattr__(self, name, _coerce(Trigger, getattr(self, name), name))
        object.__setattr__(self, "abort_source", _coerce(AbortSource, self.abort_source, "abort_source"))


@dataclass(frozen=True, slots=True)
class Scenario:
    """A named script, the agent's part, and the outcome the taxonomy says it must have.

    ``meta`` is free-form. The typed fields are what the harness (`streamfsm.testing.run_scenario`) uses:

    * ``format``: the wire format the script speaks (a registered format, e.g. "openai-chat"); None for a
      script that is not a stream of any one format.
    * ``expected_class`` / ``expected_verdict`` / ``expected_edge`` / ``expected_phase``, and optionally
      ``expected_cause``, ``expected_action`` and ``expected_retry_after_s``: the outcome, written by hand
      from the taxonomy. A field left None is not checked, except that a run expected to complete has no edge.
      Strings are accepted and turned into the enums (``expected_class="mid_generation"``).
    * ``config``: `StreamConfig` overrides for this scenario, e.g. ``{"idle_timeout": 0.3}``.
    * ``agent``: the agent's part (`Agent`): tool effects, abort, cancellation.
    * ``no_listener``: connect to a port nobody listens on ("connection refused"); the script is not played.
    * ``streaming``: False for a non-streaming call (the script answers one JSON body): only the tap's SDK
      paths play it, as the SDK's non-streaming call (``open_stream`` and ``wrap()`` always stream).
    """

    name: str
    script: Script
    meta: Mapping[str, object] = field(default_factory=dict, hash=False)
    _: KW_ONLY
    format: str | None = None
    description: str = ""
    expected_class: FailureClass | None = None
    expected_verdict: Verdict | None = None
    expected_edge: Trigger | None = None
    expected_phase: Phase | None = None
    expected_cause: str | None = None
    expected_action: Action | None = None
    expected_retry_after_s: float | None = None
    config: Mapping[str, object] = field(default_factory=dict, hash=False)
    agent: Agent = field(default_factory=Agent)
    no_listener: bool = False
    streaming: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ScriptError(f"a scenario needs a non-empty name, got {self.name!r}")
        object.__setattr__(self, "script", check_script(self.script))
        object.__setattr__(self, "meta", MappingProxyType(dict(self.meta)))
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))
        if self.config:
            from ..runtime import StreamConfig  # lazily: scripts alone need no runtime

            try:
                StreamConfig().replace(**self.config)
            except (TypeError, ValueError) as exc:
                raise ScriptError(f"scenario {self.name!r}: invalid config override: {exc}") from None
        for name, kind in (
            ("expected_class", FailureClass),
            ("expected_verdict", Verdict),
            ("expected_edge", Trigger),
            ("expected_phase", Phase),
            ("expected_action", Action),
        ):
            object.__setattr__(self, name, _coerce(kind, getattr(self, name), name))
        if self.expected_edge is not None and not self.expected_edge.is_failure:
            raise ScriptError(f"expected_edge must be a failure edge, got {self.expected_edge.value!r}")
        if self.expected_class is FailureClass.COMPLETED and self.expected_edge is not None:
            raise ScriptError("a scenario expected to complete has no failure edge")

    @property
    def expects(self) -> bool:
        """True when the scenario states an expected outcome (at least its class)."""
        return self.expected_class is not None


def encode_chunk(data: bytes) -> bytes:
    """``data`` framed as one HTTP/1.1 chunk, for building `SendRaw` payloads."""
    return b"%x\r\n%b\r\n" % (len(data), data)


def cut_chunk(payload: bytes, keep: int) -> SendRaw:
    """A chunk announcing ``len(payload)`` bytes that delivers only the first ``keep`` (then Fin or Rst)."""
    if not 0 <= keep < len(payload):
        raise ScriptError(f"keep must be in [0, {len(payload)}), got {keep}")
    return SendRaw(b"%x\r\n%b" % (len(payload), payload[:keep]))


def unused_port() -> int:
    """A TCP port on 127.0.0.1 with no listener, for "connection refused".

    The port is bound, read and released; another process could bind it before the client connects. On
    loopback in a test run that race is rare, and a listener taking it shows up as a non-refusal, not a hang.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
