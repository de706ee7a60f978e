"""Resuming a stream by the provider's own cursor: the request, and what a refusal means. Pure functions.

Of the registered formats only OpenAI Responses has a cursor we can reach (its ``Format.resume``). A response
created with ``background: true`` and ``stream: true`` numbers every event (``sequence_number``, from 0,
consecutive); after a dropped connection, ``GET /v1/responses/{id}?stream=true&starting_after=N`` streams the
events numbered above N, and only those. (The ``openai`` SDK's ``responses.retrieve(id, stream=True,
starting_after=N)`` sends exactly that; its ``responses.stream(response_id=..., starting_after=N)`` helper
instead fetches the whole stream and drops the first events itself, to rebuild its snapshot.) Anthropic
Messages has no cursor (continuation is by instruction, see ``_continue.py``); Gemini
``streamGenerateContent`` has none (the separate Interactions API has ``last_event_id``, a format we do not
speak); Chat Completions, Ollama and Bedrock have none.

When the provider cannot resume, it answers the GET with an error instead of a stream:

* 400, ``param: "stream"``: "This response cannot be streamed because it was not created with
  background=true."  ->  `ResumeRefusal.NOT_BACKGROUND`
* 400: "This response can no longer be streamed because it is more than 5 minutes old."  ->  ``TOO_OLD``
* 404: "Response with id '...' not found."  ->  ``UNKNOWN_ID``
* a cancelled response  ->  ``CANCELLED`` (the wording is our fault provider's; the status is what counts)

A response that failed on the provider's side resumes like any other: its stream ends with
``response.failed``, an in-band error the run classifies as usual. Only the status and ``param`` are read
as structure; the message is read for the two 400s that share everything else, as a recorded, lower
confidence fallback (the refusal's evidence says which).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

__all__ = ["SEQUENCE_GAP", "ResumeRefusal", "refusal_of", "resumable_request", "resume_url"]

SEQUENCE_GAP: Final = "sequence_gap"  # ProtocolViolation.detail: a resumed stream skipped an event


class ResumeRefusal(enum.Enum):
    """Why the provider would not stream a response again."""

    _value_: str

    TOO_OLD = "too_old"
    NOT_BACKGROUND = "not_background"
    UNKNOWN_ID = "unknown_id"
    CANCELLED = "cancelled"
    OTHER = "other"

    @property
    def reason(self) -> str:
        return _REASONS[self]


_REASONS: Final = {
    ResumeRefusal.TOO_OLD: "the response is too old to be streamed again",
    ResumeRefusal.NOT_BACKGROUND: "the response was not created in background mode",
    ResumeRefusal.UNKNOWN_ID: "the provider does not know the response",
    ResumeRefusal.CANCELLED: "the response was cancelled",
    ResumeRefusal.OTHER: "the provider would not stream the response again",
}


def resumable_request(body: Mapping[str, Any]) -> bool:
    """Whether a Responses request body asks for background mode (the stream is then stored and resumable)."""
    return body.get("background") is True


def resume_url(base_url: str, response_id: str, starting_after: int) -> str:
    """The URL that streams response ``response_id`` from the event after ``starting_after``."""
    if isinstance(starting_after, bool) or not isinstance(starting_after, int) or starting_after < 0:
        raise ValueError(f"starting_after must be a sequence number (an int >= 0), not {starting_after!r}")
    rid = quote(response_id, safe="")
    return f"{base_url.rstrip('/')}/responses/{rid}?stream=true&starting_after={starting_after}"


def refusal_of(status: int, body: bytes) -> tuple[ResumeRefusal, str]:
    """The refusal an HTTP error answer to a resume means, and the evidence that decided it (fixed vocabulary:
    ``status``, ``param``, ``message``; never the message itself)."""
    error: Mapping[str, Any] = {}
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        payload = None
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        error = payload["error"]
    message = error.get("message")
    text = message.lower() if isinstance(message, str) else ""
    if status in (404, 410):
        return ResumeRefusal.UNKNOWN_ID, "status"
    if error.get("param") == "stream" or "background" in text:
        return ResumeRefusal.NOT_BACKGROUND, "param" if error.get("param") == "stream" else "message"
    if "cancel" in text:
        return ResumeRefusal.CANCELLED, "message"
    if "no longer be streamed" in text or "old" in text.split():
        return ResumeRefusal.TOO_OLD, "message"
    return ResumeRefusal.OTHER, "status"
