"""The run record: one bounded, redacted JSON object per run (schema ``streamfsm.run/1``).

Memory is bounded from the start: counters are fixed dictionaries, the timeline keeps its first N and last M
entries with runs of one kind coalesced, and nothing holds stream content. Redaction happens once, here, at
capture; everything that leaves a record is already safe.
"""

from __future__ import annotations

import enum
import functools
import json
import re
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from ...classify import Diagnosis, FailureClass, TransportFacts, redact_headers, redact_text, redact_url
from ...machine import State, Trigger
from ...wire import DONE_MISSING, UNREAD_CONTENT, Adapter
from ..core._config import MAX_ATTEMPT_LINKS, Ids, StreamConfig

SCHEMA: Final = "streamfsm.run/1"
READABLE_SCHEMAS: Final = frozenset({SCHEMA})

_REQUEST_OPTIONS: Final = (
    "temperature",
    "top_p",
    "top_k",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "parallel_tool_calls",
    "n",
    "seed",
    "reasoning_effort",
    "service_tier",
)
_MAX_CONTEXT_ITEMS: Final = 16
_MAX_FINISH_RAW: Final = 64
_CONTROL: Final = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
REPLACEMENT: Final = "\ufffd"
"""What ``writable`` puts in place of a character no sink can write."""
REPLACED_FIELD: Final = "replaced_characters"
"""The record's count of characters ``writable`` replaced (present only when above 0)."""
_UNWRITABLE: Final = re.compile("[\x00\ud800-\udfff]")


def wire_text(value: str | None, limit: int) -> str | None:
    """A provider-controlled string fit for a record: redacted, bounded, control characters escaped (a
    terminal escape sequence in a finish reason must not reach a reader's terminal)."""
    if value is None:
        return None
    text = redact_text(value, limit=limit).translate(_CONTROL)
    return text if len(text) <= limit else text[: limit - 1] + "…"  # escapes lengthen it


class Timeline:
    """First ``head`` entries, last ``tail`` entries, consecutive events of one kind coalesced."""

    __slots__ = ("_head", "_head_size", "_last", "_tail", "_tail_size", "omitted", "omitted_events")

    def __init__(self, head: int, tail: int) -> None:
        self._head: list[list[Any]] = []
        self._head_size = head
        # Made on first use: most runs fit in the head, and an empty deque already costs ~0.7 KB per run.
        self._tail: deque[list[Any]] | None = None
        self._tail_size = tail
        self._last: list[Any] | None = None
        self.omitted = 0
        self.omitted_events = 0

    def add(self, kind: str, t: float, state: State) -> None:
        last = self._last
        if last is not None and last[0] == kind:
            last[2] = t
            last[3] += 1
            last[4] = state
            return
        entry = [kind, t, t, 1, state]
        if len(self._head) < self._head_size:
            self._head.append(entry)
        else:
            tail = self._tail
            if tail is None:
                tail = self._tail = deque(maxlen=self._tail_size)
            elif len(tail) == self._tail_size:
                self.omitted += 1
                self.omitted_events += tail[0][3]
            tail.append(entry)
        self._last = entry

    def __len__(self) -> int:
        return len(self._head) + (len(self._tail) if self._tail is not None else 0)

    def __iter__(self) -> Iterator[list[Any]]:
        yield from self._head
        if self._tail is not None:
            yield from self._tail

    def to_list(self) -> list[dict[str, Any]]:
        out = []
        for kind, first, last, count, state in self:
            item: dict[str, Any] = {"t": round(first, 4), "event": kind, "state": str(state)}
            if count > 1:
                item["n"] = count
                item["t_last"] = round(last, 4)
            out.append(item)
        return out


def _iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, tz=timezone.utc).isoformat(timespec="milliseconds")


def _seconds(start: float, at: float | None) -> float | None:
    return None if at is None else round(at - start, 4)


def request_shape(body: Mapping[str, Any]) -> dict[str, Any]:
    """The shape of a request, never its content: streaming, tool count, tool choice, allow-listed options.
    ``streaming`` is True here; the tap sets what its response said (False: a whole JSON answer), or None when
    no response told and the request could not be read for it."""
    tools = body.get("tools")
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping):
        choice = choice.get("type")
    options = {k: body[k] for k in _REQUEST_OPTIONS if isinstance(body.get(k), (int, float, str, bool))}
    reasoning = body.get("reasoning")
    if isinstance(reasoning, Mapping) and isinstance(reasoning.get("effort"), str):
        options["reasoning.effort"] = reasoning["effort"]
    thinking = body.get("thinking")
    if isinstance(thinking, Mapping) and isinstance(thinking.get("type"), str):
        options["thinking.type"] = thinking["type"]
    return {
        "streaming": True,
        "tool_count": len(tools) if isinstance(tools, list) else 0,
        "tool_choice": redact_text(choice, limit=32) if isinstance(choice, str) else None,
        "options": {k: redact_text(v, limit=32) if isinstance(v, str) else v for k, v in options.items()},
    }


# Adapter anomalies a reader of the outcome should see, reported as ``wire=<name>``.
_WIRE_EVIDENCE: Final = (DONE_MISSING, UNREAD_CONTENT)
_ANSWER_EVENTS: Final = ("text_delta", "tool_input_start", "tool_call")  # a refusal is a text_delta
_FIELD_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")


def _field_names(counts: Mapping[str, int]) -> dict[str, int]:
    """Raw delta field names as the provider sent them, but only names that look like field names and hold
    no credential: anything else (a secret, an escape sequence) is counted under "other"."""
    out: dict[str, int] = {}
    for key, count in counts.items():
        name = key if _FIELD_NAME.fullmatch(key) and redact_text(key, limit=64) == key else "other"
        out[name] = out.get(name, 0) + count
    return out


def _context(ids: Ids) -> dict[str, str]:
    items = list(ids.context.items())[:_MAX_CONTEXT_ITEMS]
    return {_redacted_key(str(k)): redact_text(str(v), limit=128) for k, v in items}


# What every run of a route repeats (the URL, the model, the context's keys) is redacted once: per run, the
# redaction was a visible part of a relayed stream's cost. Bounded; the values of ``ids.context`` (request
# ids, mostly unique) are not cached.
_redacted_url: Final = functools.lru_cache(maxsize=1024)(redact_url)


def _redacted_model(model: str) -> str:
    # The cache keeps its keys: a request body's "model" can be as long as the body (1 MiB parsed).
    return _redacted_short_model(model) if len(model) <= 256 else redact_text(model, limit=128)


@functools.lru_cache(maxsize=256)
def _redacted_short_model(model: str) -> str:
    return redact_text(model, limit=128)


@functools.lru_cache(maxsize=256)
def _redacted_key(key: str) -> str:
    return redact_text(key, limit=64)


def _attempts(ids: Ids) -> list[dict[str, Any]]:
    """The earlier attempts of a retried stream (the retry executor's chain), newest ``MAX_ATTEMPT_LINKS``."""
    out = []
    for link in ids.attempts[-MAX_ATTEMPT_LINKS:]:
        item = link.to_dict()
        for key in ("run_id", "summary_key", "verdict", "decision", "delay_reason", "route"):
            if key in item:
                item[key] = redact_text(str(item[key]), limit=64)
        out.append(item)
    return out


def _route(ids: Ids) -> dict[str, Any] | None:
    """The route of an attempt of a chain over routes: its name, the breaker state that let it in, and the
    routes the earlier attempts went to, in the order first tried."""
    route = ids.route
    if route is None:
        return None
    tried = dict.fromkeys(link.route for link in ids.attempts if link.route is not None)
    return {
        "name": redact_text(route.name, limit=64),
        "breaker": route.breaker,
        "tried": [redact_text(name, limit=64) for name in tried],
    }


class Recorder:
    """Collects one run's facts as they happen. Per-event work is a few dictionary and attribute updates."""

    __slots__ = (
        "_last_part",
        "abort",
        "adapter",
        "bytes_received",
        "clock",
        "config",
        "counts",
        "delta_keys",
        "finish_raw",
        "finish_unified",
        "first_progress",
        "first_visible",
        "headers_at",
        "http_headers",
        "ids",
        "last_progress",
        "model",
        "parts",
        "paused_s",
        "provider",
        "provider_ids",
        "recovery",
        "relay",
        "relay_close",
        "request",
        "request_sent",
        "run_id",
        "sdk_retries",
        "start",
        "started_wall",
        "status",
        "timeline",
        "tokens",
        "tools",
        "trace_id",
        "transport",
        "url",
        "watchdog_fired",
    )

    def __init__(
        self,
        *,
        provider: str,
        model: str | None,
        body: Mapping[str, Any],
        url: str,
        ids: Ids,
        config: StreamConfig,
        run_id: str,
        trace_id: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock  # monotonic seconds; injected so that a run core runs on a fake clock
        self.start = clock()
        self.started_wall = time.time()
        self.provider = provider
        self.model = _redacted_model(model) if model else None
        self.request = request_shape(body)
        self.url = _redacted_url(url)
        self.ids = ids
        self.config = config
        self.run_id = run_id
        self.trace_id = trace_id
        self.timeline = Timeline(config.timeline_head, config.timeline_tail)
        self.counts: dict[str, int] = {}
        self.delta_keys: Mapping[str, int] = {}
        self.parts = {"text": 0, "reasoning": 0, "tool": 0}
        self._last_part = ""
        self.tokens: dict[str, int | None] = {
            "input": None,
            "output": None,
            "reasoning": None,
            "cached": None,
        }
        self.finish_raw: str | None = None
        self.finish_unified: str | None = None
        self.headers_at: float | None = None
        self.first_progress: float | None = None
        self.first_visible: float | None = None
        self.last_progress: float | None = None
        self.status: int | None = None
        self.http_headers: dict[str, str] = {}
        self.provider_ids: dict[str, str] = {}
        self.request_sent = False
        self.bytes_received = 0
        self.transport: TransportFacts | None = None
        self.abort: dict[str, Any] | None = None
        self.watchdog_fired: str | None = None
        self.paused_s = 0.0
        self.tools = {"started": 0, "effectful": 0, "finished": 0, "failed": 0}
        self.sdk_retries = 0  # the SDK's own retries before this run's request (its x-stainless-retry-count)
        self.relay: dict[str, Any] | None = None  # only for callers that relay the stream downstream
        self.relay_close: RelayClose | None = (
            None  # a proxy's own word on the close, where the outcome's is not
        )
        self.recovery: dict[str, Any] | None = None  # how a retried stream's attempt began (resume, continue)
        self.adapter: Adapter | None = None  # the wire adapter, when the run reads an SSE body itself

    # -- per event -------------------------------------------------------------------------------------------

    def event(self, kind: str, now: float, state: State) -> None:
        counts = self.counts
        counts[kind] = counts.get(kind, 0) + 1
        timeline = self.timeline
        last = timeline._last
        if last is not None and last[0] == kind:  # Timeline.add's coalescing, inlined: the common case
            last[2] = now - self.start
            last[3] += 1
            last[4] = state
        else:
            timeline.add(kind, now - self.start, state)

    def progress(self, trigger: Trigger, now: float) -> None:
        if self.first_progress is None:
            self.first_progress = now
        self.last_progress = now
        part = _PART_OF.get(trigger)
        if part is not None:
            # Text and reasoning parts are runs of deltas; every tool call is a part of its own.
            if part != self._last_part or part == "tool":
                self._last_part = part
                self.parts[part] += 1
            if part == "text" and self.first_visible is None:  # "text" is exactly TEXT_DELTA
                self.first_visible = now

    def lifecycle(self, kind: str, state: State, *, at: float | None = None) -> None:
        """``at``: when it happened (monotonic), if earlier than now."""
        self.timeline.add(kind, (self.clock() if at is None else at) - self.start, state)

    # -- facts -----------------------------------------------------------------------------------------------

    def response_headers(self, status: int, headers: Mapping[str, str]) -> None:
        self.headers_at = self.clock()
        self.status = status
        self.http_headers = redact_headers(headers)
        for name in ("x-request-id", "request-id", "x-goog-request-id", "x-amzn-requestid", "cf-ray"):
            value = headers.get(name)
            if value:
                self.provider_ids.setdefault("request_id", wire_text(value, 128) or "")
                break

    def response_id(self, value: str | None) -> None:
        if value:
            self.provider_ids["response_id"] = wire_text(value, 128) or ""

    def usage(self, input: int | None, output: int | None, reasoning: int | None, cached: int | None) -> None:
        tokens = self.tokens
        for key, value in (
            ("input", input),
            ("output", output),
            ("reasoning", reasoning),
            ("cached", cached),
        ):
            if value is not None:
                tokens[key] = value

    def set_abort(self, source: str, reason: str | None) -> None:
        self.abort = {
            "source": source,
            "reason": redact_text(reason, limit=200) if reason else None,
            "at_s": round(self.clock() - self.start, 4),
        }

    def relayed(self, kind: str | None, nbytes: int, terminal: bool) -> None:
        """A proxy wrote ``nbytes`` downstream, carrying the event ``kind`` (None: bytes of no event of their
        own, such as the rest of a frame or a keepalive; 0 bytes: the response started downstream)."""
        relay = self.relay
        if relay is None:
            relay = self.relay = {
                "events_sent": 0,
                "chunks_written": 0,
                "bytes_written": 0,
                "last_event_sent": None,
                "terminal_sent": False,
                "error_sent": None,
                "end_sent": False,
            }
        relay["chunks_written"] += nbytes > 0
        relay["bytes_written"] += nbytes
        if kind is not None:
            relay["events_sent"] += 1
            relay["last_event_sent"] = kind
            relay["terminal_sent"] = relay["terminal_sent"] or terminal

    def relayed_events(self, count: int, last: str, nbytes: int, terminal: bool) -> None:
        """``relayed`` for ``count`` events written in one chunk of ``nbytes`` (the last of kind ``last``;
        ``terminal``: one of them was the terminal event), in one call."""
        if self.relay is None:
            self.relayed(None, 0, False)
        relay = self.relay
        assert relay is not None
        relay["chunks_written"] += nbytes > 0
        relay["bytes_written"] += nbytes
        relay["events_sent"] += count
        relay["last_event_sent"] = last
        if terminal:
            relay["terminal_sent"] = True

    def relayed_error(self, source: str, nbytes: int) -> None:
        """An in-band error event reached the client: the upstream's own (``source`` "upstream", its bytes
        counted with its chunk) or the proxy's (``"relay"``, ``nbytes`` of it)."""
        self.relayed(None, nbytes, False)
        assert self.relay is not None
        if self.relay["error_sent"] is None:
            self.relay["error_sent"] = source

    def relayed_end(self) -> None:
        """The response's clean end (the last chunk of its framing) reached the client."""
        self.relayed(None, 0, False)
        assert self.relay is not None
        self.relay["end_sent"] = True

    def resealed(self, record: RunRecord, diagnosis: Diagnosis) -> RunRecord:
        """``record``, made when the run failed, with what a proxy wrote downstream since (the rest of what
        it passed on, its error event, the response's end): the record says what the client got."""
        section = self._relay_section(diagnosis)
        if section is None or section == record._data.get("relay"):
            return record
        data = record.to_dict()
        data["relay"] = section
        return RunRecord._adopt(data)

    def _wire_finish(self) -> str | None:
        return self.adapter.finish_raw if self.adapter is not None else None

    def _relay_section(self, diagnosis: Diagnosis) -> dict[str, Any] | None:
        if self.relay is None:
            return None
        counts = self.counts
        close = self.relay_close or _RELAY_CLOSE[diagnosis.failure_class]
        return {
            "close": close.value,
            "upstream_events": sum(counts.values()),
            **self.relay,
            "reasoning_seen": counts.get("reasoning_delta", 0) > 0,
        }

    def wire_evidence(self) -> tuple[str, ...]:
        """What the wire adapter noted that a reader of the outcome should see (fixed vocabulary)."""
        adapter = self.adapter
        if adapter is None:
            return ()
        anomalies = adapter.anomalies
        return tuple(f"wire={name}" for name in _WIRE_EVIDENCE if anomalies.get(name))

    def content_unread(self) -> bool:
        """Content arrived that the adapter could not read, and no answer (text, refusal, tool call) was read
        at all: a finish must not be called a whole answer."""
        adapter = self.adapter
        if adapter is None or not adapter.anomalies.get(UNREAD_CONTENT):
            return False
        counts = self.counts
        return not any(counts.get(kind) for kind in _ANSWER_EVENTS)

    # -- the record ------------------------------------------------------------------------------------------

    def finish(self, diagnosis: Diagnosis, final: State, *, end: float | None = None) -> RunRecord:
        """Seal the record. ``end``: when the stream ended, if earlier than now."""
        end = self.clock() if end is None else end
        start = self.start
        ids = self.ids
        transport = self.transport
        config = self.config
        last_progress_age = None if self.last_progress is None else round(end - self.last_progress, 4)
        data: dict[str, Any] = {
            "schema": SCHEMA,
            "ids": {
                "trace_id": self.trace_id,
                "run_id": self.run_id,
                "session_id": redact_text(ids.session_id, limit=128) if ids.session_id else None,
                "message_id": redact_text(ids.message_id, limit=128) if ids.message_id else None,
                "attempt": ids.attempt,
                "previous_run_id": ids.previous_run_id,
                "provider_request_id": self.provider_ids.get("request_id"),
                "response_id": self.provider_ids.get("response_id"),
                "context": _context(ids),
            },
            "attempts": _attempts(ids),
            "route": _route(ids),
            "started_at": _iso(self.started_wall),
            "provider": self.provider,
            "model": self.model,
            "endpoint": self.url,
            "request": self.request,
            "outcome": {
                "state": str(final),
                "from_state": str(diagnosis.state),
                "edge": diagnosis.edge.value if diagnosis.edge else None,
                "phase": diagnosis.phase.value,
                "cause": diagnosis.cause,
                "class": diagnosis.failure_class.value,
                "summary_key": diagnosis.summary_key,
                "confidence": diagnosis.confidence.value,
                "evidence": list(diagnosis.evidence),
            },
            "retry": {
                "verdict": diagnosis.verdict.value,
                "reason": diagnosis.reason,
                "action": diagnosis.action.value,
                "retry_after_s": diagnosis.retry_after_s,
                "possibly_delivered": diagnosis.possibly_delivered,
            },
            "summary": {"title": diagnosis.title, "detail": diagnosis.detail},
            "stream_events": dict(self.counts),
            "delta_keys": _field_names(self.delta_keys),
            "stored_parts": dict(self.parts),
            "tokens": dict(self.tokens),
            # The raw reason whenever it arrived, even if the stream broke after it (never a unified one
            # then: a broken stream did not finish).
            "finish_reason": {
                "raw": wire_text(self.finish_raw or self._wire_finish(), _MAX_FINISH_RAW),
                "unified": self.finish_unified,
            },
            "timings": {
                "to_headers_s": _seconds(start, self.headers_at),
                "to_first_progress_s": _seconds(start, self.first_progress),
                "to_first_visible_s": _seconds(start, self.first_visible),
                "last_progress_age_s": last_progress_age,
                "total_s": round(end - start, 4),
            },
            "watchdog": {
                "connect_timeout_s": config.connect_timeout,
                "first_token_timeout_s": config.first_token_timeout,
                "idle_timeout_s": config.idle_timeout,
                "total_timeout_s": config.total_timeout,
                "fired": self.watchdog_fired,
                "idle_paused_s": round(self.paused_s, 4),
            },
            "abort": self.abort,
            "transport": {
                "kind": transport.kind.value if transport else None,
                "chain": list(transport.chain) if transport else [],
                "errno": transport.errno if transport else None,
                "markers": list(transport.markers) if transport else [],
                "request_sent": self.request_sent,
                "headers_received": self.headers_at is not None,
                "status": self.status,
                "bytes_received": self.bytes_received,
                "response_headers": self.http_headers,
            },
            "tools": dict(self.tools),
            "relay": self._relay_section(diagnosis),
            "recovery": self.recovery,
            **({"sdk_retries": self.sdk_retries} if self.sdk_retries else {}),
            "timeline": {
                "entries": self.timeline.to_list(),
                "omitted": self.timeline.omitted,
                "omitted_events": self.timeline.omitted_events,
            },
        }
        return RunRecord._adopt(data)


class RelayClose(enum.Enum):
    """The relay's close kind: how a proxied stream ended, as the proxy saw it."""

    _value_: str

    COMPLETED = "completed"  # the terminal event reached the client's socket
    CLIENT_ABORT = "client_abort"
    CLIENT_WRITE_FAILED = "client_write_failed"
    UPSTREAM_ERROR = "upstream_error"
    UPSTREAM_TIMEOUT = "upstream_timeout"
    UPSTREAM_UNREACHABLE = "upstream_unreachable"  # no response headers came: the client got a 502
    UPSTREAM_PREMATURE_CLOSE = "upstream_premature_close"
    RELAY_SHUTDOWN = "relay_shutdown"  # the proxy itself went away mid-stream
    OVERLOADED = "overloaded"  # the proxy refused it (503, a limit of its own full) before it went upstream
    REFUSED = "refused"  # the proxy refused the request itself (400, 408, 413) before it went upstream


# The close kind from the outcome alone (a proxy says RELAY_SHUTDOWN, or a finished run's terminal that never
# reached the client, itself: Recorder.relay_close).
_RELAY_CLOSE: Final = {
    FailureClass.COMPLETED: RelayClose.COMPLETED,
    FailureClass.LOCAL_ABORT: RelayClose.CLIENT_ABORT,
    FailureClass.CONSUMER_ERROR: RelayClose.CLIENT_WRITE_FAILED,
    FailureClass.PROVIDER_ERROR: RelayClose.UPSTREAM_ERROR,
    FailureClass.PROTOCOL_ERROR: RelayClose.UPSTREAM_ERROR,
    FailureClass.WATCHDOG: RelayClose.UPSTREAM_TIMEOUT,
    FailureClass.BEFORE_CONNECTION: RelayClose.UPSTREAM_UNREACHABLE,
    **dict.fromkeys(
        (
            FailureClass.EARLY_STREAM,
            FailureClass.MID_GENERATION,
            FailureClass.TOOL_INPUT_INTERRUPTED,
            FailureClass.TOOL_CALL_INTERRUPTED,
            FailureClass.TOOL_SIDE_EFFECT,
        ),
        RelayClose.UPSTREAM_PREMATURE_CLOSE,
    ),
}

_PART_OF: Final = {
    Trigger.TEXT_DELTA: "text",
    Trigger.REASONING_DELTA: "reasoning",
    Trigger.TOOL_CALL: "tool",
}


def _freeze(value: Any) -> Any:
    # Recurse into containers only: most values are scalars, and a call per scalar was most of the cost.
    if isinstance(value, dict):
        return MappingProxyType(
            {k: _freeze(v) if isinstance(v, _CONTAINERS) else v for k, v in value.items()}
        )
    if isinstance(value, list):
        return tuple([_freeze(v) if isinstance(v, _CONTAINERS) else v for v in value])
    return value


_CONTAINERS: Final = (dict, list)


def writable(data: dict[str, Any]) -> int:
    """Make every string of ``data`` (keys too, at any depth) writable by every sink, in place: each lone
    surrogate (valid JSON, ``"\\ud800"``, that UTF-8 cannot encode) and each NUL (PostgreSQL refuses it in
    text and jsonb) becomes U+FFFD. Adds the count to ``data["replaced_characters"]``; returns it."""
    replaced = _replace_in(data)
    if replaced:
        before = data.get(REPLACED_FIELD)
        data[REPLACED_FIELD] = replaced + (before if type(before) is int and before > 0 else 0)
    return replaced


def _replace_in(value: dict[str, Any] | list[Any]) -> int:
    count = 0
    if isinstance(value, dict):
        for key in list(value):
            item = value[key]
            if isinstance(item, str):
                item, n = _UNWRITABLE.subn(REPLACEMENT, item)
                count += n
            elif isinstance(item, (dict, list)):
                count += _replace_in(item)
            elif isinstance(item, tuple):
                item = list(item)
                count += _replace_in(item)
            if isinstance(key, str) and _UNWRITABLE.search(key):
                del value[key]
                key, n = _UNWRITABLE.subn(REPLACEMENT, key)
                count += n
            value[key] = item
        return count
    for i, item in enumerate(value):
        if isinstance(item, str):
            value[i], n = _UNWRITABLE.subn(REPLACEMENT, item)
            count += n
        elif isinstance(item, (dict, list)):
            count += _replace_in(item)
        elif isinstance(item, tuple):
            value[i] = item = list(item)
            count += _replace_in(item)
    return count


def _no_escapes(text: str | bytes) -> bool:
    """Whether JSON ``text``, parsed, surely holds no surrogate or NUL: no ``\\u`` escape, and no surrogate
    as such (``json.loads`` decodes bytes with ``surrogatepass``: 0xED 0xA0..0xBF is one)."""
    if isinstance(text, bytes):
        return b"\\u" not in text and b"\xed" not in text
    return "\\u" not in text and _writable_json(text)


def _writable_json(text: str) -> bool:
    """Whether a record's JSON text (``ensure_ascii=False``: NUL escaped as ``\\u0000``, a surrogate kept
    raw) holds nothing ``writable`` replaces; for an ASCII text, one substring search."""
    if "\\u0000" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _plain(value: Any) -> Any:
    """A deep copy as plain JSON-shaped data: mappings become dicts, lists and tuples become lists."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class RunRecord(Mapping[str, Any]):
    """An immutable run record. Read it like a mapping, as the JSON it exports: ``record["model"]``,
    ``record["outcome"]["summary_key"]`` (nested sections are read-only views); ``record.model`` raises an
    ``AttributeError`` saying so. ``run_id``, ``failure_class``, ``summary_key`` and ``verdict`` are shortcuts
    into the nested sections; ``to_dict()`` and ``to_json()`` export it."""

    __slots__ = ("_data", "_json", "_views")

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._check_schema(data)
        self._data: dict[str, Any] = _plain(data)  # a copy: the caller keeps its own
        self._views: dict[str, Any] = {}
        self._json: str | None = None
        self._make_writable()

    @staticmethod
    def _check_schema(data: Mapping[str, Any]) -> None:
        schema = data.get("schema")
        if schema not in READABLE_SCHEMAS:
            raise ValueError(
                f"unreadable run record schema {schema!r}; this version reads {sorted(READABLE_SCHEMAS)}"
            )

    @classmethod
    def _adopt(cls, data: dict[str, Any], *, clean: bool = False) -> RunRecord:
        """A record over ``data`` without copying it: for data built for this record alone, which nothing
        else holds or changes (``Recorder.finish``; a record just parsed by ``from_json`` or the log reader).
        Sealing or reading a run then costs no copy; views are made when read. ``clean``: the caller
        knows ``data`` holds nothing to replace (a parsed line without a ``\\u`` escape)."""
        record = cls.__new__(cls)
        record._data = data
        record._views = {}
        record._json = None
        if not clean:
            record._make_writable()
        return record

    def _make_writable(self) -> None:
        """The edge every sink writes from: a record holds no character any sink refuses (``writable``).
        Its JSON, made here to find them, is kept: every sink writes that same text."""
        try:
            text = json.dumps(self._data, sort_keys=False, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):  # no JSON at all: ``to_json`` will say so
            writable(self._data)
            return
        if _writable_json(text):
            self._json = text
        else:
            writable(self._data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        return cls(data)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunRecord:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a run record is a JSON object")
        cls._check_schema(data)
        return cls._adopt(data, clean=_no_escapes(text))  # parsed here: nothing else holds it, no copy

    def __getitem__(self, key: str) -> Any:
        views = self._views
        if key in views:
            return views[key]
        value = self._data[key]
        if isinstance(value, _CONTAINERS):
            value = views[key] = _freeze(value)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def to_dict(self) -> dict[str, Any]:
        plain: dict[str, Any] = _plain(self._data)
        return plain

    def to_json(self, *, indent: int | None = None) -> str:
        if indent is not None:
            return json.dumps(self._data, indent=indent, sort_keys=False, ensure_ascii=False)
        # Made once: the audit log, the error log and a store each write the same text of a record.
        text = self._json
        if text is None:
            text = self._json = json.dumps(self._data, sort_keys=False, ensure_ascii=False)
        return text

    @property
    def run_id(self) -> str:
        return str(self._data["ids"]["run_id"])

    @property
    def failure_class(self) -> str:
        return str(self._data["outcome"]["class"])

    @property
    def summary_key(self) -> str:
        return str(self._data["outcome"]["summary_key"])

    @property
    def verdict(self) -> str:
        return str(self._data["retry"]["verdict"])

    def __repr__(self) -> str:
        return f"RunRecord(run_id={self.run_id!r}, summary_key={self.summary_key!r})"

    if not TYPE_CHECKING:  # a type checker still reports an unknown attribute

        def __getattr__(self, name: str) -> Any:
            # Only for an attribute that is not there: a field of the record is read by its key.
            if not name.startswith("_") and name in self._data:
                said = f"a RunRecord is read like a mapping: record[{name!r}], not record.{name}"
                raise AttributeError(said)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
