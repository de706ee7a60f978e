"""Helpers for the tests of runs: cut points in wire streams, consuming a run, checking records and what every
failure meets."""

from __future__ import annotations

import copy
import gc
import json
from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

import streamfsm
from streamfsm.machine import INITIAL_STATE, Activity, Trigger
from streamfsm.testing import BODIES as KIT_BODIES
from streamfsm.testing import SSE_FORMATS, Headers, Send
from streamfsm.wire import SSEDecoder, StreamEvent, adapter_for

# The kit's request bodies of the formats these tests play over HTTP, with the Anthropic model the records and
# spans these tests check name.
_HTTP_FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini", "ollama")
BODIES: dict[str, dict[str, Any]] = {fmt: copy.deepcopy(dict(KIT_BODIES[fmt])) for fmt in _HTTP_FORMATS}
BODIES["anthropic"]["model"] = "claude-sonnet-4-5"
__all__ = [
    "BODIES",
    "HTTP_ERRORS",
    "RAW_STRINGS",
    "SSE_FORMATS",
    "check_failure",
    "consume",
    "cut_before",
    "cut_through",
    "expect",
    "left_to_the_collector",
    "script",
    "split_at",
    "validate_record",
]

# (status, headers, body, cause, verdict, retry_after_s): HTTP errors before any stream, with what the
# taxonomy says of each; shared by the open_stream and the SDK drop-in tests.
HTTP_ERRORS = [
    (
        429,
        (("retry-after", "2"),),
        b'{"error": {"type": "requests", "code": "rate_limit_exceeded"}}',
        "rate_limit",
        "safe_auto_retry",
        2.0,
    ),
    (
        429,
        (("retry-after-ms", "1500"),),
        b'{"error": {"type": "requests"}}',
        "rate_limit",
        "safe_auto_retry",
        1.5,
    ),
    (
        401,
        (),
        b'{"error": {"type": "invalid_request_error", "code": "invalid_api_key"}}',
        "auth",
        "no_retry",
        None,
    ),
    (
        400,
        (),
        b'{"error": {"type": "invalid_request_error", "code": "context_length_exceeded"}}',
        "context_overflow",
        "no_retry",
        None,
    ),
    (503, (("x-should-retry", "false"),), b"{}", "server_error", "no_retry", None),
    (
        529,
        (),
        b'{"type": "error", "error": {"type": "overloaded_error"}}',
        "overloaded",
        "safe_auto_retry",
        None,
    ),
]


def _first_frame_with(fmt: str, frames: Sequence[bytes], kind: type) -> int:
    adapter = adapter_for(fmt)
    decoder = SSEDecoder()
    for index, raw in enumerate(frames):
        events: list[StreamEvent] = []
        for sse in decoder.feed(raw):
            events += adapter.feed(sse)
        if any(type(event) is kind for event in events):
            return index
    raise AssertionError(f"no {kind.__name__} in the {fmt} stream")


def cut_before(fmt: str, frames: Sequence[bytes], kind: type) -> list[bytes]:
    """The frames before the first one that yields an event of ``kind``."""
    return list(frames[: _first_frame_with(fmt, frames, kind)])


def cut_through(fmt: str, frames: Sequence[bytes], kind: type) -> list[bytes]:
    """The frames up to and including the first one that yields an event of ``kind``."""
    return list(frames[: _first_frame_with(fmt, frames, kind) + 1])


@cache
def _schema() -> dict[str, Any]:
    text = resources.files("streamfsm").joinpath("schemas/run-1.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def validate_record(record: streamfsm.RunRecord) -> dict[str, Any]:
    """Validate a record against the JSON Schema, after a JSON round trip; return the dict."""
    data: dict[str, Any] = json.loads(record.to_json())
    jsonschema.validate(data, _schema())
    assert streamfsm.RunRecord.from_dict(data).to_dict() == data
    return data


_TRIGGERS = {trigger.value: trigger for trigger in Trigger}


def machine_walk_problems(record: Any) -> list[str]:
    """What in a record's timeline the machine disputes: replayed from the initial state, every trigger is a
    move the table allows and lands in the state the entry says (a coalesced entry, ``n`` times); the run
    reaches exactly one terminal state, takes no trigger after it, and its outcome names that state and the
    last trigger as its edge. Whichever driver made the record, the core's properties hold of it."""
    entries = record["timeline"]["entries"]
    if record["timeline"]["omitted"]:  # a bounded timeline lost its middle: only its end can be checked
        entries = ()
    state, last, ended = INITIAL_STATE, None, False
    for index, entry in enumerate(entries):
        kind = entry["event"]
        trigger = _TRIGGERS.get(kind)
        if trigger is not None:
            if ended:
                return [f"entry {index}: {kind} after the terminal state {state}"]
            for _ in range(entry.get("n", 1)):
                moved = state._next.get(trigger)
                if moved is None:
                    return [f"entry {index}: {kind} is no move from {state}"]
                state = moved
            last = kind
        if str(state) != entry["state"]:
            return [f"entry {index}: {kind} says {entry['state']}, the machine says {state}"]
        ended = state.is_terminal
    outcome = record["outcome"]
    problems = []
    if entries and outcome["state"] != str(state):
        problems.append(f"the timeline ends in {state}, the outcome says {outcome['state']}")
    if not Activity(outcome["state"].partition("/")[0]).is_terminal:
        problems.append(f"the outcome's state {outcome['state']} is not terminal")
    if entries and outcome["edge"] not in (None, last):
        problems.append(f"the last trigger is {last}, the outcome's edge {outcome['edge']}")
    return problems


async def consume(run: streamfsm.Run) -> list[Any]:
    """Iterate a run to its end, returning the events it delivered."""
    return [event async for event in run]


def _ours(obj: object, also: tuple[type, ...]) -> bool:
    module = type(obj).__module__
    library = module.startswith("streamfsm.") and not module.startswith("streamfsm.testing")
    return library or isinstance(obj, also)


def left_to_the_collector(play: Callable[[], object], *, also: tuple[type, ...] = ()) -> Counter[str]:
    """Call ``play`` with the cyclic collector off; then the kinds of the library's objects (and of ``also``)
    that it left in reference cycles, by name. Reference counting frees everything else as it goes."""
    gc.freeze()  # what exists already (garbage too) is set aside: the collection below sees what play made
    gc.disable()
    try:
        play()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        return Counter(type(obj).__qualname__ for obj in gc.garbage if _ours(obj, also))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.unfreeze()
        gc.enable()


# -- a failed run: what every failure's record and message must meet ----------------------------------------

# The transport libraries' own words, which a diagnosis never repeats.
RAW_STRINGS = ("terminated", "incomplete chunked read", "Connection error.")


def script(frames: list[bytes], *tail: Any) -> tuple[Any, ...]:
    """Headers, each frame sent on its own, then ``tail`` (how the stream ends)."""
    return (Headers(), *(Send(f) for f in frames), *tail)


def check_failure(failure: streamfsm.StreamFailed) -> streamfsm.StreamFailed:
    data = validate_record(failure.record)
    assert data["outcome"]["state"].startswith("failed/")
    assert failure.diagnosis.detail in str(failure)
    for raw in RAW_STRINGS:
        assert raw not in failure.diagnosis.title and raw not in failure.diagnosis.detail
    return failure


def expect(failure: streamfsm.StreamFailed, klass: str, verdict: str, edge: str, phase: str) -> None:
    outcome = failure.record["outcome"]
    assert (outcome["class"], failure.record["retry"]["verdict"], outcome["edge"], outcome["phase"]) == (
        klass,
        verdict,
        edge,
        phase,
    ), dict(outcome)


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at each of ``cuts`` (taken modulo its length + 1): the pieces, empty ones included."""
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
