"""Per-run configuration: watchdog deadlines and the bounds that keep a run's memory constant."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from ...wire import MAX_LINE_BYTES

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..records._record import RunRecord
    from ..retry._recovery import RecoveryPlan


MAX_TIMELINE = 256  # entries; the JSON Schema holds the same bound


def _check_timeout(name: str, value: float | None) -> None:
    if value is not None and not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive number of seconds or None, not {value!r}")


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """How one run is watched and bounded.

    Watchdogs (seconds; ``None`` turns one off):

    * ``connect_timeout`` (30): from the start of the request to the response headers. The tap over httpx's
      own transport counts it from when the request leaves (its connect or its first header write): a wait
      for a pooled connection or a busy event loop is the client's, not the upstream's.
    * ``first_token_timeout`` (300): from the headers to the first provider progress (reasoning counts).
      Reasoning models can think for minutes before the first token, hence the long default.
    * ``idle_timeout`` (600): the longest silence between two provider-progress events. Pings, SSE comments
      and metadata do not count as progress, so a stall kept alive by keepalives still fires.
    * ``total_timeout`` (None): a deadline for the whole run.

    ``pause_idle_during_tools``: stop the idle clock while an effectful tool runs inside the stream.

    Bounds: ``max_line_bytes`` (64 MiB) is the longest SSE line accepted (longer is a protocol violation,
    never buffered past the bound); ``max_error_body_bytes`` (64 KiB) of an HTTP error's body are read; the
    timeline keeps its first ``timeline_head`` and last ``timeline_tail`` entries; the machine's history
    keeps ``history_size`` triggers.

    ``sinks``: callables handed each finished record exactly once, in order, **inline** on the thread that
    ends the run (an async run's event loop): a sink's time is time every stream on that loop stands
    still, so a sink must be fast (one slower than 0.1 s is reported on ``streamfsm.sinks``). Wrap a slow
    one in ``BackgroundSink``, which calls it on a thread of its own; ``ErrorLog`` / ``AuditLog`` never
    wait for their lock inline. A sink's failure never reaches the run: it is logged and counted in
    ``streamfsm.sink_failures()``.
    """

    connect_timeout: float | None = 30.0
    first_token_timeout: float | None = 300.0
    idle_timeout: float | None = 600.0
    total_timeout: float | None = None
    pause_idle_during_tools: bool = False
    max_line_bytes: int = MAX_LINE_BYTES
    max_error_body_bytes: int = 64 << 10
    timeline_head: int = 16
    timeline_tail: int = 48
    history_size: int = 64
    sinks: tuple[Callable[[RunRecord], None], ...] = field(default=())

    def __post_init__(self) -> None:
        for name in ("connect_timeout", "first_token_timeout", "idle_timeout", "total_timeout"):
            _check_timeout(name, getattr(self, name))
        for name in (
            "max_line_bytes",
            "max_error_body_bytes",
            "timeline_head",
            "timeline_tail",
            "history_size",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if self.timeline_head + self.timeline_tail > MAX_TIMELINE:
            raise ValueError(
                f"timeline_head + timeline_tail must be at most {MAX_TIMELINE} (the record's bound)"
            )
        object.__setattr__(self, "sinks", tuple(self.sinks))
        for sink in self.sinks:
            if not callable(sink):
                raise TypeError(f"a sink must be callable with a RunRecord, not {type(sink).__name__}")

    def replace(self, **changes: Any) -> StreamConfig:
        return dataclasses.replace(self, **changes)


MAX_ATTEMPT_LINKS = 32
"""The most earlier attempts a record lists (a `RetryPolicy` allows at most this many attempts)."""


_OPTIONAL_LINK_KEYS: Final = (
    "next",
    "resume_from",
    "continue_after_chars",
    "resume_refused",
    "continue_refused",
    "route",
    "breaker",
)


class RouteTag(NamedTuple):
    """The route an attempt of a routed chain went to (`Route.name`), and the state of its circuit breaker
    that let the attempt in (``half_open``: it was the breaker's probe)."""

    name: str
    breaker: str


@dataclass(frozen=True, slots=True)
class AttemptLink:
    """One attempt of a retried stream, as the retry executor (``streamfsm.retrying``) links it.

    A record lists the attempts *before* its own under ``attempts``: each was retried (``decision``
    ``"auto_retry"`` or ``"confirmed_retry"``; seen by the transport tap: ``"sdk_retry"``, the SDK's own
    retry, or ``"resent"``, the same request sent again after it failed; ``"raced"``: it raced another route's
    attempt for the first token and was stopped when it lost) after waiting ``delay_s`` seconds
    for ``delay_reason`` (``"retry_after"``: the provider said so; ``"backoff"``: exponential backoff;
    ``"none"``). In
    ``RetryingRun.attempts`` and ``StreamFailed.attempts`` the last link says how the chain ended:
    ``"completed"`` or ``"stopped"``. ``verdict`` is the machine's verdict on that attempt.

    How the next attempt began (the retry executor's links; None elsewhere): ``next`` is ``"retry"`` (a
    fresh request), ``"resume"`` (the provider's stream re-attached after event ``resume_from``),
    ``"continue"`` (a request carrying the ``continue_after_chars`` characters delivered) or ``"replay"`` (a
    fresh request after confirmation). ``resume_refused`` says why the provider refused a resume attempt,
    ``continue_refused`` why it refused a continuation (``"prefill_unsupported"``: the model takes no
    assistant prefill, so the next attempt continued by instruction). In a chain over routes, ``route`` is
    the route the attempt went to and ``breaker`` its circuit breaker's state once the attempt ended.
    """

    run_id: str
    attempt: int
    summary_key: str
    verdict: str
    decision: str
    delay_s: float = 0.0
    delay_reason: str = "none"
    next: str | None = None
    resume_from: int | None = None
    continue_after_chars: int | None = None
    resume_refused: str | None = None
    continue_refused: str | None = None
    route: str | None = None
    breaker: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "run_id": self.run_id,
            "attempt": self.attempt,
            "summary_key": self.summary_key,
            "verdict": self.verdict,
            "decision": self.decision,
            "delay_s": self.delay_s,
            "delay_reason": self.delay_reason,
        }
        for key in _OPTIONAL_LINK_KEYS:
            value = getattr(self, key)
            if value is not None:  # only the retry executor's links say how the next attempt began
                out[key] = value
        return out


@dataclass(frozen=True, slots=True)
class Ids:
    """Correlation ids a run carries into its record. ``context`` holds caller-supplied strings such as a
    proxy's request id, tenant, tag or route; values are redacted and bounded at capture."""

    trace_id: str | None = None
    session_id: str | None = None
    message_id: str | None = None
    attempt: int = 1
    previous_run_id: str | None = None
    context: Mapping[str, str] = field(default_factory=dict)
    attempts: tuple[AttemptLink, ...] = ()  # the earlier attempts of a retried stream, oldest first
    recovery: RecoveryPlan | None = None  # how this attempt begins (retry executor)
    route: RouteTag | None = None  # where this attempt goes (retry executor over routes)

    def __post_init__(self) -> None:
        links = tuple(
            link if isinstance(link, AttemptLink) else AttemptLink(**link) for link in self.attempts
        )
        object.__setattr__(self, "attempts", links)
        if self.route is not None and not isinstance(self.route, RouteTag):
            object.__setattr__(self, "route", RouteTag(*self.route))

    @classmethod
    def coerce(cls, value: Ids | Mapping[str, Any] | None) -> Ids:
        if value is None:
            return cls()
        if isinstance(value, Ids):
            return value
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(value) - known
        if unknown:
            raise TypeError(f"unknown ids {sorted(unknown)}; put caller context under 'context'")
        return cls(**value)
