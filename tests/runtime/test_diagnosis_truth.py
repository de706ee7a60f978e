"""Issue 16: wire shapes from real providers' bug reports, over real loopback sockets, and what the run says.

Each test here failed before the fix it names; the catalog (``streamfsm harness``) plays most of the same
shapes for class, verdict and cause, and these tests check the words and the record besides.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import streamfsm
from streamfsm import StreamConfig, StreamFailed
from streamfsm.testing import End, FaultServer, Headers, Scenario, Send, Status, find, frame
from tests.support.runs import BODIES, consume, validate_record

pytestmark = pytest.mark.anyio


async def play(scenario: Scenario | str, config: StreamConfig | None = None) -> streamfsm.RunRecord:
    """Play a catalog scenario (or one written here) through open_stream; the record, checked."""
    if isinstance(scenario, str):
        scenario = find(scenario)
    fmt = scenario.format or "openai-chat"
    config = config or StreamConfig().replace(**scenario.config)
    async with FaultServer(scenario.script) as server:
        run = streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt], config=config)
        try:
            async with run:
                await consume(run)
        except StreamFailed:
            pass
    assert run.record is not None
    validate_record(run.record)
    return run.record


def words(record: Any) -> str:
    return f"{record['summary']['title']}. {record['summary']['detail']}"


# -- item 1: too large for the window is not a rate limit ----------------------------------------------------


@pytest.mark.parametrize(
    "name", ["openai-chat/http-429-request-too-large", "openai-chat/http-413-rate-limit-code"]
)
async def test_a_request_too_large_for_the_window_says_to_shorten_it(name: str) -> None:
    record = await play(name)
    assert record["outcome"]["summary_key"] == "provider_error.request_too_large"
    assert (record["retry"]["verdict"], record["retry"]["action"]) == ("no_retry", "fix_request")
    assert "shorten the request" in words(record)
    assert "waiting will not help" in words(record)


# -- item 4: a chat stream without [DONE] --------------------------------------------------------------------


async def test_a_chat_stream_that_ends_cleanly_without_done_is_finished_and_says_so() -> None:
    record = await play("openai-chat/done-missing-clean-close")
    assert record["outcome"]["summary_key"] == "completed.finished"
    assert "wire=done_missing" in record["outcome"]["evidence"]
    assert dict(record["finish_reason"]) == {"raw": "stop", "unified": "stop"}


async def test_the_finish_reason_is_recorded_even_when_the_stream_breaks_after_it() -> None:
    record = await play("openai-chat/finish-reason-then-fin")
    assert record["outcome"]["summary_key"] == "mid_generation.closed_mid_body"
    assert dict(record["finish_reason"]) == {"raw": "stop", "unified": None}  # nothing invented


# -- item 7: a finish that is not a whole answer -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("openai-chat/finish-length", "The answer was cut at the output token limit"),
        ("openai-responses/finish-length", "The answer was cut at the output token limit"),
        ("anthropic/finish-length", "The answer was cut at the output token limit"),
        ("gemini/finish-length", "The answer was cut at the output token limit"),
        ("openai-chat/finish-content-filter", "The provider's content filter stopped the answer"),
        ("gemini/finish-recitation", "The provider's content filter stopped the answer"),
        ("anthropic/finish-refusal", "The model refused to answer"),
        ("gemini/finish-malformed-function-call", "The model produced a malformed tool call"),
    ],
)
async def test_a_finish_that_is_not_a_whole_answer_says_what_happened(name: str, says: str) -> None:
    record = await play(name)
    assert record["outcome"]["state"].startswith("finished/")
    assert record["summary"]["title"] == says
    assert "the response is complete" not in words(record)


# -- item 9: an in-band error while a tool call is being written ---------------------------------------------


async def test_an_error_finish_while_a_call_is_written_names_the_tool_and_says_it_did_not_run() -> None:
    record = await play("openai-chat/tool-args-then-finish-error")
    assert record["outcome"]["phase"] == "tool_input"
    assert "while the model was still writing the call to `apply_patch`" in words(record)
    assert "The tool did not run." in words(record)
    assert record["finish_reason"]["raw"] == "error"
    assert "finish_reason=error" in record["outcome"]["evidence"]


# -- item 3: a body that is not an event stream --------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic", "gemini"])
async def test_a_json_completion_at_200_is_possibly_delivered_and_never_read_as_half_an_event(
    fmt: str,
) -> None:
    record = await play(f"{fmt}/json-completion-at-200")
    assert "detail=json_completion" in record["outcome"]["evidence"]
    assert record["retry"]["possibly_delivered"] is True
    assert record["retry"]["verdict"] == "user_confirmed_retry"
    assert "generated" in record["retry"]["reason"]


async def test_an_auth_error_at_200_stays_an_auth_error() -> None:
    record = await play("openai-chat/json-auth-error-at-200")
    assert "body=not_event_stream" in record["outcome"]["evidence"]
    assert "sk-proj" not in json.dumps(record.to_dict())


async def test_a_body_larger_than_a_document_is_junk_at_once() -> None:
    # A non-SSE body is read whole only up to a bound: a huge HTML page fails as soon as it passes it.
    page = b"<html>" + b"x" * (70 * 1024)
    scenario = Scenario(
        "big-page", (Status(200, (("content-type", "text/html"),), page),), format="anthropic"
    )
    record = await play(scenario)
    assert record["outcome"]["summary_key"] == "protocol_error.protocol_violation"
    assert "detail=not_event_stream" in record["outcome"]["evidence"]


# -- hostile data: provider-controlled strings and numbers ---------------------------------------------------

SECRET = "sk-proj-HOSTILE0123456789abcdefSECRET"


async def test_provider_controlled_strings_and_numbers_reach_the_record_redacted_bounded_and_escaped() -> (
    None
):
    chunk = {
        "id": "chatcmpl-\x1b[31m" + SECRET,
        "model": "m",
        "choices": [
            {"index": 0, "delta": {"content": "Hi", SECRET: "x", "\x1b]0;t\x07": "y"}, "finish_reason": None}
        ],
    }
    done = {
        "id": "x",
        "choices": [
            {"index": 0, "delta": {}, "finish_reason": "stop " + SECRET + "\x1b[2J" + "z" * 2_000_000}
        ],
        "usage": {"prompt_tokens": int("9" * 400), "completion_tokens": 7},
    }
    steps = (Headers(), Send(frame(chunk)), Send(frame(done)), Send(b"data: [DONE]\n\n"), End())
    record = await play(Scenario("hostile", steps, format="openai-chat"))
    text = record.to_json()
    assert SECRET not in text and "HOSTILE" not in text
    assert "\x1b" not in text and "\x07" not in text
    assert len(text) < 20_000  # a 2 MB finish reason is bounded at capture
    assert len(record["finish_reason"]["raw"]) <= 64
    assert set(record["delta_keys"]) == {"content", "other"}
    assert record["tokens"]["input"] is None  # 400 digits is no count
    assert record["tokens"]["output"] == 7
