"""The tap under the real agent frameworks (issue 17): each framework runs the same scenario twice against the
local fault provider, once on a plain client of the HTTP library its seam takes and once on
``streamfsm.async_http_client``, and what the framework shows its caller must be the same (text as it
streamed, the final answer, tool calls, the tool's own runs, the exception type and its chain, the number of
requests, so the SDK's retries), while the tap leaves one record per stream with the right diagnosis.

Frameworks (``tests.support.frameworks.FRAMEWORKS``): the OpenAI Agents SDK (``Runner.run_streamed``, Chat
Completions and Responses models), pydantic-ai (``Agent.run_stream``, OpenAI and Anthropic providers),
LangChain (``ChatOpenAI`` and ``ChatAnthropic``, ``astream``), LiteLLM (``acompletion(stream=True)``, openai/
and anthropic/) and google-genai (``generate_content_stream``)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import streamfsm
from tests.support.frameworks import (
    FRAMEWORKS,
    KEEPALIVE_COUNT,
    KEEPALIVE_EVERY_S,
    RETRY_AFTER_S,
    WATCHDOG_S,
    Expect,
    Framework,
    Outcome,
    chain_of,
    cut_in_tool_arguments,
    cut_mid_answer,
    gzipped,
    keepalive_stall,
    normal,
    plain_client,
    play,
    preload,
    rate_limited,
)

pytestmark = pytest.mark.anyio
each = pytest.mark.parametrize("fw", FRAMEWORKS, ids=str)

SESSION = "sess-frameworks"
preload()


async def tapped(
    fw: Framework, router: Any, *, idle_timeout: float | None = None, **kwargs: Any
) -> tuple[Outcome, list[dict[str, Any]]]:
    """``fw`` on the tap's client, in a ``streamfsm.context``; its records, as dicts."""
    records: list[Any] = []
    config = streamfsm.StreamConfig(sinks=(records.append,), idle_timeout=idle_timeout or 600.0)
    client = streamfsm.async_http_client(http=fw.http, config=config)
    assert type(client).__module__.split(".")[0] == fw.http, "the tap's client is of the seam's library"
    with streamfsm.context(session_id=SESSION, message_id=f"msg-{fw.name}"):
        outcome = await play(fw, router, client, **kwargs)
    return outcome, [record.to_dict() for record in records]


async def both(fw: Framework, router: Any, **kwargs: Any) -> tuple[Outcome, Outcome, list[dict[str, Any]]]:
    plain = await play(fw, router, plain_client(fw.http), **kwargs)
    tap, records = await tapped(fw, router, **kwargs)
    return plain, tap, records


def check_records(fw: Framework, records: list[dict[str, Any]], expected: list[Expect]) -> None:
    seen = [(r["outcome"]["summary_key"], r["retry"]["verdict"]) for r in records]
    assert seen == [(e.summary_key, e.verdict) for e in expected], seen
    for record in records:
        assert record["ids"]["session_id"] == SESSION
        assert record["ids"]["message_id"] == f"msg-{fw.name}"
        assert record["provider"] == fw.fmt


def check_failure(outcome: Outcome, expected: Expect) -> streamfsm.StreamFailed:
    """The framework's exception leads to the tap's failure, and the raw HTTP error carries its summary."""
    assert outcome.exception is not None, "the framework raised"
    failure = streamfsm.failure_of(outcome.exception)
    assert failure is not None, f"no StreamFailed reachable from {outcome.error_chain}"
    assert (failure.diagnosis.summary_key, failure.diagnosis.verdict.value) == (
        expected.summary_key,
        expected.verdict,
    )
    return failure


def check_note(outcome: Outcome, failure: streamfsm.StreamFailed) -> None:
    """A transport error or watchdog timeout that went through the tap carries the plain summary as a note."""
    notes = [note for exc in chain_of(outcome.exception) for note in getattr(exc, "__notes__", ())]
    assert any(failure.diagnosis.title in note for note in notes), (outcome.error_chain, notes)


def up_to_http(chain: list[str]) -> list[str]:
    """The exception chain down to the first HTTP-library error (what the SDK and framework made of it)."""
    for n, name in enumerate(chain):
        if name.startswith(("httpx.", "httpx2.")):
            return chain[: n + 1]
    return chain


@each
async def test_a_tool_call_then_an_answer_is_unchanged(fw: Framework) -> None:
    router, expected = normal(fw)
    plain, tap, records = await both(fw, router)
    assert plain.error is None, plain.error_chain
    assert tap.visible() == plain.visible()
    assert tap.tool_calls == [("get_weather", {"city": "Paris"})]
    assert tap.tools_ran == [{"city": "Paris"}]
    if fw.agent:
        assert tap.final == "It is sunny."
    assert tap.requests == len(expected)
    check_records(fw, records, expected)
    for record in records:
        if not fw.closes_after_stop_reason:
            assert record["outcome"]["state"].startswith("finished"), record["outcome"]
        assert record["ids"]["attempt"] == 1, "two turns of an agent are two calls, not retries"
        assert record["stream_events"].get("tool_call", 0) + record["stream_events"].get("text_delta", 0) > 0
    if fw.agent:
        assert records[0]["stream_events"].get("tool_call") == 1
        assert records[0]["ids"]["trace_id"] != records[1]["ids"]["trace_id"]


@each
async def test_a_gzip_encoded_stream_is_unchanged_and_decoded_by_the_tap(fw: Framework) -> None:
    router, expected = gzipped(fw)
    plain, tap, records = await both(fw, router)
    assert plain.error is None, plain.error_chain
    assert tap.visible() == plain.visible()
    assert tap.tool_calls == [("get_weather", {"city": "Paris"})]
    check_records(fw, records, expected)
    assert all(
        r["stream_events"].get("tool_call", 0) + r["stream_events"].get("text_delta", 0) for r in records
    )


@each
async def test_a_cut_mid_answer_raises_what_it_raised_without_the_tap(fw: Framework) -> None:
    router, expected = cut_mid_answer(fw)
    plain, tap, records = await both(fw, router)
    assert plain.error is not None
    assert tap.visible() == plain.visible()
    assert tap.requests == 1, "no retry after visible output"
    check_records(fw, records, expected)
    check_note(tap, check_failure(tap, expected[0]))
    assert streamfsm.failure_of(plain.exception) is None


@each
async def test_a_cut_in_a_tool_calls_arguments_raises_what_it_raised_without_the_tap(fw: Framework) -> None:
    router, expected = cut_in_tool_arguments(fw)
    plain, tap, records = await both(fw, router)
    assert plain.error is not None
    assert tap.visible() == plain.visible()
    assert tap.tools_ran == [], "the tool never ran"
    check_records(fw, records, expected)
    check_note(tap, check_failure(tap, expected[0]))


@each
async def test_a_stall_kept_alive_fails_as_the_sdks_own_read_timeout(fw: Framework) -> None:
    """Without the tap, keepalives hold the framework until the peer leaves (a connection error, after all of
    them); the SDK's own read timeout catches only a silent stall. Through the tap, the idle watchdog fails
    the read with the HTTP library's ReadTimeout: the framework raises exactly what it raises for its own
    read timeout, long before the keepalives end."""
    router, expected = keepalive_stall(fw)
    silent, _ = keepalive_stall(fw, silent=True)
    kept_alive = await play(fw, router, plain_client(fw.http), timeout=WATCHDOG_S)
    read_timeout = await play(fw, silent, plain_client(fw.http), timeout=WATCHDOG_S)
    tap, records = await tapped(fw, router, idle_timeout=WATCHDOG_S, timeout=WATCHDOG_S)

    keepalives_s = KEEPALIVE_EVERY_S * KEEPALIVE_COUNT
    assert kept_alive.error is not None and kept_alive.elapsed_s >= keepalives_s * 0.9
    assert up_to_http(kept_alive.error_chain) != up_to_http(read_timeout.error_chain)
    assert read_timeout.error is not None
    assert tap.error == read_timeout.error
    assert up_to_http(tap.error_chain) == up_to_http(read_timeout.error_chain)
    assert (tap.text, tap.final, tap.tool_calls, tap.requests) == (
        read_timeout.text,
        read_timeout.final,
        read_timeout.tool_calls,
        read_timeout.requests,
    )
    assert tap.elapsed_s < keepalives_s * 0.9, "the watchdog fired before the keepalives ended"
    check_records(fw, records, expected)
    check_note(tap, check_failure(tap, expected[0]))


@each
async def test_a_429_is_retried_as_without_the_tap(fw: Framework) -> None:
    router, expected = rate_limited(fw)
    plain, tap, records = await both(fw, router, max_retries=1)
    assert plain.error is not None
    assert tap.visible() == plain.visible()
    # max_retries=1 is one retry, by the SDK or by the framework (LiteLLM's num_retries=1 on openai/ makes
    # three requests: it lets the SDK retry once inside its first try); the same with and without the tap.
    assert tap.requests >= 2
    check_records(fw, records, expected * tap.requests)
    for record in records:
        assert record["retry"]["retry_after_s"] == pytest.approx(RETRY_AFTER_S)
        assert record["transport"]["status"] == 429
    check_failure(tap, expected[0])


@each
async def test_the_retries_of_one_call_form_one_attempt_chain(fw: Framework) -> None:
    router, _ = rate_limited(fw)
    tap, records = await tapped(fw, router, max_retries=1)
    assert len(records) == tap.requests >= 2
    assert [r["ids"]["attempt"] for r in records] == list(range(1, tap.requests + 1))
    assert len({r["ids"]["trace_id"] for r in records}) == 1
    for before, after in itertools.pairwise(records):
        assert after["ids"]["previous_run_id"] == before["ids"]["run_id"]
    decisions = [link["decision"] for link in records[-1]["attempts"]]
    assert set(decisions) <= {"sdk_retry", "resent"}
    failure = streamfsm.failure_of(tap.exception)
    assert failure is not None
    assert failure.record["ids"]["trace_id"] == records[0]["ids"]["trace_id"]
    if not fw.name.startswith("litellm"):  # LiteLLM raises its last error in the context of its first
        assert failure.record["ids"]["attempt"] == tap.requests, "the last attempt's"
