"""Helpers for the retry executor's tests: per-attempt scripts, and runs that remember what they yielded."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from streamfsm import Ids, StreamConfig
from streamfsm.runtime import ConsumerEvent, HttpRun
from streamfsm.testing import End, Headers, Request, Send, Status, text_stream
from tests.support.runs import BODIES, SSE_FORMATS, cut_before, cut_through, validate_record

__all__ = [
    "BODIES",
    "BUSY",
    "FAST",
    "JSON",
    "SSE_FORMATS",
    "Spies",
    "SpyRun",
    "cut_before",
    "cut_through",
    "ok_script",
    "per_attempt",
    "validate_record",
]

Script = tuple[Any, ...]

FAST: dict[str, Any] = {"initial_delay_s": 0.001, "max_delay_s": 0.01}  # a policy's backoff, for tests
JSON = ("content-type", "application/json")
BUSY = Status(503, (JSON,), b'{"error": {"type": "server_error", "message": "busy"}}')


def per_attempt(scripts: Sequence[Script]) -> Callable[[Request], Script]:
    """A router that plays ``scripts[n - 1]`` for the n-th request the server sees (the last one after)."""

    def route(request: Request) -> Script:
        return scripts[min(request.seq, len(scripts) - 1)]

    return route


def ok_script(fmt: str, tag: str) -> Script:
    """A complete stream whose every text carries ``tag``: reasoning, two text deltas, usage, the terminal."""
    frames = text_stream(fmt, [f"{tag} hello", f" {tag} world"], reasoning=[f"{tag} thinking"])  # type: ignore[arg-type]
    return (Headers(), *(Send(f) for f in frames), End())


class SpyRun(HttpRun):
    """An HTTP run that remembers every event it yielded, so a test knows each attempt's ground truth."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.yielded: list[ConsumerEvent] = []

    async def __anext__(self) -> ConsumerEvent:
        event = await super().__anext__()
        self.yielded.append(event)
        return event


class Spies(list[SpyRun]):
    """``open_attempt`` for a fault server: each attempt a `SpyRun`, kept here in order."""

    def __init__(self, base_url: str, fmt: str = "openai-chat", config: StreamConfig | None = None) -> None:
        super().__init__()
        self.base_url, self.fmt, self.config = base_url, fmt, config
        self.ids: list[Ids] = []

    def __call__(self, ids: Ids) -> SpyRun:
        self.ids.append(ids)
        run = SpyRun(self.fmt, base_url=self.base_url, json=BODIES[self.fmt], config=self.config, ids=ids)
        self.append(run)
        return run
