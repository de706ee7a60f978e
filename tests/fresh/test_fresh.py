"""Issue 33's fresh held-out set, one test per shape and backend (``shapes.py``; sources and scores in
``SOURCES.md``).

``KNOWN_MISSES`` holds the shapes today's code gets wrong (the before-score): strict xfails, so a change that
fixes one fails here until its line is removed. ``python -m tests.fresh`` prints the same check as a table
with a score; ``--litellm`` scores LiteLLM on the same set.
"""

from __future__ import annotations

import pytest
from fresh_score import check
from shapes import SHAPES, Shape

KNOWN_MISSES: dict[str, str] = {
    # feature: current API features the adapters do not read
    "responses-custom-tool-freeform-input": "a custom tool's raw-text input is failed as unparseable JSON",
    "responses-parallel-calls-interleaved": "interleaved argument deltas of parallel calls: a protocol error",
    "responses-shell-tool-call": "a completed shell_call item is unread content, not a whole turn",
    "chat-custom-tool-call-delta": "a Chat 'custom' tool call is handed out nameless with input '{}'",
    "chat-parallel-calls-interleaved-indices": "interleaved tool-call indices are a protocol error",
    "chat-usage-inside-choice": "usage inside the choice is not read",
    "gemini-streamed-function-call-arguments": "each partialArgs fragment is counted as a call of its own",
    "gemini-partial-args-end-mid-call": "fragments of an unfinished streamed call are handed out as calls",
    # error: the words say more than the status, and the status wins
    "g4f-tokens-per-day-at-500": "a per-day token limit at 500 is a transient server error",
    "oneapi-no-available-channel-503": "'no available channel for the model' at 503: transient",
    "ollama-model-needs-more-memory-500": "'model requires more memory than is available' at 500: transient",
    "gemini-499-cancelled-in-array": "a 499 CANCELLED is the client's fault (invalid_request), no retry",
    "deepseek-content-exists-risk-400": "'Content Exists Risk' is read by its type: invalid_request",
    "letta-detail-wraps-insufficient-balance": "the insufficient balance in 'detail' is not read: rate_limit",
    # finish: one record, two voices; malformed or unexpected calls handed out
    "glm-chat-model-context-window-exceeded": "read as a length stop, but finish_reason.unified says 'other'",
    "gemini-unexpected-tool-call-with-call": "the call the finish calls unexpected is handed out",
    "bedrock-malformed-tool-use-with-call": "the call the finish calls malformed is handed out",
    # sse: a complete last event without its closing blank line is dropped
    "gemini-last-event-without-blank-line": "the unterminated last event is dropped: no terminal event",
    "responses-completed-without-blank-line": "the unterminated response.completed is dropped",
    "anthropic-message-stop-without-blank-line": "the unterminated message_stop is dropped",
    "chat-finish-chunk-without-blank-line": "the unterminated finish chunk is dropped",
}


def _param(shape: Shape) -> object:
    why = KNOWN_MISSES.get(shape.id)
    marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
    return pytest.param(shape, id=shape.id, marks=marks)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("shape", [_param(s) for s in SHAPES])
def test_shape(shape: Shape, backend: str) -> None:
    # Each shape on a fault server of its own over loopback; every run is bounded (heldout_score.RUN_BOUND_S).
    misses = check(shape, backend)
    assert not misses, f"{shape.id} ({shape.root}): {shape.why}; misses: {misses}"


def test_every_known_miss_is_a_shape() -> None:
    assert set(KNOWN_MISSES) <= {s.id for s in SHAPES}
