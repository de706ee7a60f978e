"""The fault provider's resume side: OpenAI Responses in background mode, re-attachable by cursor.

`BackgroundResponses` is a `FaultServer` router. It holds one response's whole stream (frames numbered by
``sequence_number`` from 0, as `text_stream("openai-responses", ...)` builds them) and plays it over as many
connections as it takes::

    POST .../responses                                    the stream from its start, up to the first cut
    GET  .../responses/{id}?stream=true&starting_after=N  the events numbered above N, up to the next cut

``cuts`` say where each connection breaks: ``Cut(at, how)`` ends the connection once the stream's first
``at`` frames have been sent overall, with ``how`` (a FIN by default; an RST, a stall, a stall kept alive by
keepalives). The connection after the last cut plays to the end. A GET is refused the way OpenAI refuses
one (`refusal_body`): for a response not created with ``background: true`` (the POST body says), one older
than ``max_age_s``, one whose id is not this response's, or always with ``refuse``. A response that failed
on the provider's side is a stream whose frames end in ``response.failed``: a resume replays it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qs, unquote

from ..wire import ResumeRefusal
from ._script import End, Fin, Headers, Script, Send, Status, Step
from ._server import Request
from ._wire import RESPONSES_ID

__all__ = ["BackgroundResponses", "Cut", "refusal_body"]

_JSON: Final = (("content-type", "application/json"),)


def refusal_body(refusal: ResumeRefusal, response_id: str) -> tuple[int, bytes]:
    """The status and body OpenAI answers a resume it refuses with (see ``wire/_adapters/_resume.py``)."""
    status, message, param, code = {
        ResumeRefusal.NOT_BACKGROUND: (
            400,
            "This response cannot be streamed because it was not created with background=true.",
            "stream",
            "invalid_request_error",
        ),
        ResumeRefusal.TOO_OLD: (
            400,
            "This response can no longer be streamed because it is more than 5 minutes old.",
            None,
            None,
        ),
        ResumeRefusal.UNKNOWN_ID: (404, f"Response with id '{response_id}' not found.", None, None),
        ResumeRefusal.CANCELLED: (
            400,
            "This response was cancelled and can no longer be streamed.",
            None,
            None,
        ),
        ResumeRefusal.OTHER: (400, "This response cannot be streamed.", None, None),
    }[refusal]
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return status, json.dumps({"error": error}).encode()


@dataclass(frozen=True, slots=True)
class Cut:
    """Break the connection once ``at`` frames of the stream have been sent in all, with ``how``."""

    at: int
    how: tuple[Step, ...] = (Fin(),)


def _sequence(frame: bytes) -> int:
    data = b"".join(line[5:].strip() for line in frame.splitlines() if line.startswith(b"data:"))
    number = json.loads(data).get("sequence_number")
    if type(number) is not int:
        raise ValueError("every frame of a background stream needs a sequence_number")
    return number


class BackgroundResponses:
    """A router playing one background Responses stream across cuts and resumes (see the module docstring).

    ``requests`` lists what each request asked for, as ``("POST", None)`` or ``("GET", starting_after)``;
    ``refused`` the refusals answered. Safe to read from the test's thread.
    """

    def __init__(
        self,
        frames: Sequence[bytes],
        cuts: Sequence[Cut] = (),
        *,
        refuse: ResumeRefusal | None = None,
        max_age_s: float | None = None,
        response_id: str = RESPONSES_ID,
    ) -> None:
        self.frames = tuple(frames)
        self.numbers = [_sequence(frame) for frame in self.frames]
        self.cuts = sorted(cuts, key=lambda cut: cut.at)
        if any(not 0 <= cut.at <= len(self.frames) for cut in self.cuts):
            raise ValueError("a cut must fall within the stream")
        self.refuse = refuse
        self.max_age_s = max_age_s
        self.response_id = response_id
        self.requests: list[tuple[str, int | None]] = []
        self.refused: list[ResumeRefusal] = []
        self._lock = threading.Lock()
        self._background: bool | None = None
        self._created: float | None = None
        self._connections = 0

    def __call__(self, request: Request) -> Script:
        with self._lock:
            if request.method == "POST":
                return self._create(request)
            return self._resume(request)

    def _create(self, request: Request) -> Script:
        body: Any = json.loads(request.body or b"{}")
        self._background = isinstance(body, dict) and body.get("background") is True
        self._created = time.monotonic()
        self.requests.append(("POST", None))
        return self._play(0)

    def _resume(self, request: Request) -> Script:
        query = parse_qs(request.query)
        after = int(query.get("starting_after", ["-1"])[0])
        self.requests.append(("GET", after))
        rid = unquote(request.path.rstrip("/").rpartition("/")[2])
        refusal = self.refuse
        if rid != self.response_id or self._created is None:
            refusal = ResumeRefusal.UNKNOWN_ID
        elif not self._background:
            refusal = ResumeRefusal.NOT_BACKGROUND
        elif self.max_age_s is not None and time.monotonic() - self._created > self.max_age_s:
            refusal = ResumeRefusal.TOO_OLD
        if refusal is not None:
            self.refused.append(refusal)
            status, body = refusal_body(refusal, rid)
            return (Status(status, _JSON, body),)
        start = next((i for i, n in enumerate(self.numbers) if n > after), len(self.frames))
        return self._play(start)

    def _play(self, start: int) -> Script:
        cut = self.cuts[self._connections] if self._connections < len(self.cuts) else None
        self._connections += 1
        if cut is not None and cut.at >= start:
            frames, tail = self.frames[start : cut.at], cut.how
        else:
            frames, tail = self.frames[start:], (End(),)
        return (Headers(), *(Send(frame) for frame in frames), *tail)
