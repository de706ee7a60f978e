"""A provider error is read as weighed evidence: the kind and the verdict follow what the error says, over
every status, the words' spelling, the wrapper they come in and where they arrive.

Where: an HTTP error body, an in-band SSE error event, and a JSON error document at HTTP 200, first through
the classifier's own entry points (many examples), then through the real runtime over loopback sockets (a
fault server playing each position, few examples).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamfsm
from streamfsm import StreamConfig, StreamFailed
from streamfsm.classify import Facts, ProviderError, ProviderErrorKind, Verdict, diagnose
from streamfsm.classify._provider import (
    EVIDENCE,
    provider_error_from_document,
    provider_error_from_event,
    provider_error_from_http,
)
from streamfsm.machine import Activity, State, Trigger
from streamfsm.testing import End, FaultServerThread, Headers, Request, Send, Status, frame

K = ProviderErrorKind
NAMES = {row.name for row in EVIDENCE}

# -- words, by what they say ---------------------------------------------------------------------------------

# A limit counted per hour, day, week or month: spent until a reset no automatic retry sits out.
LONG_WINDOW = (
    "Rate limit reached for model `llama-3.3-70b` on tokens per day (TPD): Limit 500000, Used 499000,"
    " Requested 2000.",
    "Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day",
    "You are using a Trial key, which is limited to 1000 API calls / month.",
    "You have reached your daily limit of 200 requests.",
    "Requests per day (RPD) limit exceeded for this model.",
    "Monthly quota exceeded; it resets on the first of the month.",
)
# A limit counted per second or minute: it lifts by itself.
SHORT_WINDOW = (
    "Limit: 60 requests per minute.",
    "Rate limit reached on tokens per min (TPM): Limit 30000, Used 30000, Requested 100.",
    "Too many requests: 10 requests per second allowed.",
    "Quota exceeded for this minute, slow down.",
)
QUOTA_CODES = ("quota_exceeded", "insufficient_quota", "quota_limit_reached", "exceeded_current_quota_error")
# The model cannot be served where the request went: no wait brings a route, a loaded model or memory.
RESOURCE = (
    "No available channel for model gpt-4o under group default (request id: 2026120203)",
    "当前分组 default 下对于模型 gpt-4o 无可用渠道",
    "no route available for model 'claude-sonnet-4-5'",
    "No deployments are configured for model gpt-4.1",
    "model requires more system memory (12.3 GiB) than is available (7.8 GiB)",
    "the model needs more memory than the server has",
    "CUDA out of memory. Tried to allocate 2.00 GiB",
    "No models loaded. Please load a model in the developer page or use the `lms load` command.",
    "model 'llama3.3' not found, try pulling it first",
    "The model `qwen-72b` does not exist.",
)
# The operation was cancelled: the same request may well finish.
CANCELLED = (
    "The operation was cancelled.",
    "context canceled",
    "Request cancelled by the client",
    "upstream request canceled while waiting for the model",
)
# Money: no wait refills it.
MONEY = (
    "Insufficient Balance",
    "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing.",
    "You exceeded your current quota, please check your plan and billing details.",
    "Your team has either used all available credits or reached its monthly spending limit.",
    "Budget has been exceeded! Current cost: 10.2, Max budget: 10.0",
)
NEUTRAL = ("Something went wrong.", "Request failed.", "An error occurred while processing your request.")

ANY_STATUS = (400, 401, 403, 404, 408, 409, 413, 422, 429, 499, 500, 502, 503, 504, 529)
# A 413 says the request alone is larger than a rate limit's window (Groq's 413 with a rate-limit code).
NOT_413 = tuple(s for s in ANY_STATUS if s != 413)
# Statuses that name no kind of their own: words that say which outweigh them.
GENERIC_STATUS = (400, 408, 409, 422, 499, 500, 502, 503, 504)

# -- wrappers: how providers, gateways and servers put an error in a body ------------------------------------

Wrapper = Callable[[str, str | None, int], object]


def _object(message: str, code: str | None, status: int) -> dict[str, Any]:
    # OpenAI's shape; Gemini's and OpenRouter's carry the HTTP status in the body, as a number
    return {"message": message, "code": code if code is not None else status, "status": status}


WRAPPERS: dict[str, Wrapper] = {
    "object": lambda m, c, s: {"error": _object(m, c, s)},
    "array": lambda m, c, s: [{"error": _object(m, c, s)}],  # Gemini's list
    "nested": lambda m, c, s: {"error": {"error": _object(m, c, s)}},  # a gateway re-wrapping the upstream's
    "string": lambda m, c, s: {"error": m, **({"code": c} if c else {})},  # xAI, Ollama, proxies
    "detail": lambda m, c, s: {"detail": m},  # FastAPI servers (LiteLLM, vLLM)
    "detail_list": lambda m, c, s: {"detail": [{"loc": ["body"], "msg": m, "type": c or "value_error"}]},
    "message_only": lambda m, c, s: {"message": m, **({"code": c} if c else {})},
}
# What each position can carry: an SSE data line is one object (no list), and a 2xx document is an error
# only when it says so (an ``error`` member), as the runtime reads it.
POSITIONS: dict[str, tuple[str, ...]] = {
    "http": tuple(WRAPPERS),
    "in_band": tuple(w for w in WRAPPERS if w != "array"),
    "json_at_200": ("object", "array", "nested", "string"),
}
# Wrappers that carry the HTTP status inside the body, so an in-band error or a 2xx document has it too.
CARRY_STATUS = ("object", "array", "nested")


def classify(position: str, status: int, payload: object) -> ProviderError:
    if position == "http":
        return provider_error_from_http(status, {}, json.dumps(payload).encode())
    if position == "in_band":
        assert isinstance(payload, dict)
        return provider_error_from_event(payload)
    found = provider_error_from_document(payload)
    assert found is not None, payload
    return found


def verdict_of(position: str, error: ProviderError) -> Verdict:
    edge = Trigger.HTTP_ERROR if position == "http" else Trigger.PROVIDER_ERROR_EVENT
    state = State.of(Activity.CONNECTING if position == "http" else Activity.STREAMING)
    return diagnose(state, edge, Facts(provider=error)).verdict


def everywhere(message: str, code: str | None, status: int) -> dict[tuple[str, str], tuple[K, Verdict]]:
    """(kind, verdict) for the words in every wrapper at every position."""
    out = {}
    for position, wrappers in POSITIONS.items():
        for wrapper in wrappers:
            if code is not None and wrapper in ("detail",):
                continue  # a bare string has no room for a code
            got = classify(position, status, WRAPPERS[wrapper](message, code, status))
            rows = [m for m in got.markers if m.startswith("row=")]
            assert len(rows) == 1 and rows[0][4:] in NAMES, got.markers  # the evidence names its row
            out[position, wrapper] = (got.kind, verdict_of(position, got))
    return out


def one_reading(readings: dict[tuple[str, str], tuple[K, Verdict]]) -> tuple[K, Verdict]:
    """The kind and verdict do not depend on the wrapper or the position."""
    assert len(set(readings.values())) == 1, readings
    return next(iter(readings.values()))


def cased(text: str) -> st.SearchStrategy[str]:
    return st.sampled_from((text, text.upper(), text.lower()))


@st.composite
def respelled(draw: st.DrawFn, code: str) -> str:
    """A code with other separators and case: words, not exact codes."""
    words = code.split("_")
    sep = draw(st.sampled_from(("_", "-", ".", " ")))
    style = draw(st.sampled_from(("lower", "upper", "pascal")))
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    return sep.join(w.upper() if style == "upper" else w for w in words)


# -- the properties ------------------------------------------------------------------------------------------

# Each example classifies the words in every wrapper at every position: a modest budget covers the space.
pure = settings(max_examples=60, deadline=None)


@pure
@given(message=st.sampled_from(LONG_WINDOW).flatmap(cased), status=st.sampled_from(ANY_STATUS))
def test_a_limit_per_day_or_month_is_never_an_automatic_retry(message: str, status: int) -> None:
    kind, verdict = one_reading(everywhere(message, None, status))
    assert (kind, verdict) == (K.QUOTA_EXHAUSTED, Verdict.NO_RETRY)


@pure
@given(
    message=st.sampled_from(LONG_WINDOW),
    status=st.sampled_from(NOT_413),
    wait=st.integers(61, 86_400),
    wrapper=st.sampled_from(POSITIONS["http"]),
)
def test_a_limit_per_day_with_a_stated_long_wait_keeps_the_wait_and_asks(
    message: str, status: int, wait: int, wrapper: str
) -> None:
    body = json.dumps(WRAPPERS[wrapper](message, None, status)).encode()
    got = provider_error_from_http(status, {"retry-after": str(wait)}, body)
    assert (got.kind, got.retry_after_s) == (K.RATE_LIMIT, float(wait))
    assert verdict_of("http", got) is Verdict.USER_CONFIRMED_RETRY


@pure
@given(
    code=st.sampled_from(QUOTA_CODES).flatmap(respelled),
    message=st.sampled_from(SHORT_WINDOW),
    status=st.sampled_from(NOT_413),
)
def test_a_quota_per_minute_is_a_rate_limit_whatever_its_code_says(
    code: str, message: str, status: int
) -> None:
    kind, verdict = one_reading(everywhere(message, code, status))
    assert kind is K.RATE_LIMIT
    assert verdict is Verdict.SAFE_AUTO_RETRY


@pure
@given(message=st.sampled_from(RESOURCE).flatmap(cased), status=st.sampled_from(ANY_STATUS))
def test_words_about_the_models_resources_are_never_transient(message: str, status: int) -> None:
    kind, verdict = one_reading(everywhere(message, None, status))
    assert kind in (K.MODEL_UNAVAILABLE, K.NOT_FOUND)
    assert verdict is Verdict.NO_RETRY


@pure
@given(message=st.sampled_from(CANCELLED).flatmap(cased), status=st.sampled_from(GENERIC_STATUS))
def test_a_cancelled_operation_is_transient(message: str, status: int) -> None:
    kind, verdict = one_reading(everywhere(message, None, status))
    assert kind in (K.SERVER_ERROR, K.RATE_LIMIT, K.OVERLOADED)
    assert verdict is Verdict.SAFE_AUTO_RETRY


@pure
@given(message=st.sampled_from(MONEY).flatmap(cased), status=st.sampled_from(ANY_STATUS))
def test_money_words_decide_under_any_status(message: str, status: int) -> None:
    kind, verdict = one_reading(everywhere(message, None, status))
    assert (kind, verdict) == (K.QUOTA_EXHAUSTED, Verdict.NO_RETRY)


@pure
@given(
    message=st.sampled_from(NEUTRAL),
    status=st.sampled_from(ANY_STATUS),
    wrapper=st.sampled_from(CARRY_STATUS),
)
def test_the_status_decides_the_same_wherever_it_is_carried(message: str, status: int, wrapper: str) -> None:
    # Words that name no kind leave it to the status: the HTTP status, or the one the body carries.
    payload = WRAPPERS[wrapper](message, None, status)
    readings = {(p, wrapper): classify(p, status, payload).kind for p in POSITIONS if wrapper in POSITIONS[p]}
    assert len(set(readings.values())) == 1, readings


def test_every_row_of_the_table_says_what_it_reads_decides_and_why() -> None:
    names = [row.name for row in EVIDENCE]
    assert len(names) == len(set(names))
    assert all(row.reads and row.decides and row.why for row in EVIDENCE)
    assert EVIDENCE[-1].read is not None and names[-1] == "nothing"


# Where signals conflict, the table says which wins: (status, headers, body, kind, the row that decides).
CONFLICTS = [
    # a router's cooldown states a wait: it lifts by itself, so the resource words do not decide
    (
        429,
        {},
        {"error": {"message": "No deployments available for selected model, Try again in 60 seconds."}},
        K.RATE_LIMIT,
        "status",
    ),
    # a cancelled subscription is not a cancelled operation
    (400, {}, {"error": {"message": "Your subscription was cancelled."}}, K.INVALID_REQUEST, "status"),
    # an upstream outage is not about the model
    (503, {}, {"error": {"message": "no healthy upstream"}}, K.SERVER_ERROR, "status"),
    # a status that names a kind outweighs "cancelled" in words
    (401, {}, {"error": {"message": "context canceled"}}, K.AUTH, "status"),
    # what must change outweighs a window
    (
        400,
        {},
        {"error": {"code": "context_length_exceeded", "message": "Limit 100000 tokens per day"}},
        K.CONTEXT_OVERFLOW,
        "must_change_code",
    ),
    # a quota with no window stays spent, even beside a retry-after (OpenAI's insufficient_quota)
    (
        429,
        {"retry-after": "20"},
        {"error": {"code": "insufficient_quota", "message": "You exceeded your current quota."}},
        K.QUOTA_EXHAUSTED,
        "limit_code",
    ),
    # money outweighs a window: no wait refills it
    (
        429,
        {},
        {"error": {"code": "credit_balance_exhausted", "message": "60 requests per minute"}},
        K.QUOTA_EXHAUSTED,
        "money_code",
    ),
    # a daily limit with a stated wait past an automatic retry keeps the wait, and the verdict asks
    (
        429,
        {},
        {"error": {"message": "Limit on tokens per day (TPD). Please try again in 9m38s."}},
        K.RATE_LIMIT,
        "long_window",
    ),
    # the words outweigh a 500: a per-day limit, and the model's memory
    (500, {}, {"error": {"message": "Daily limit reached for this key."}}, K.QUOTA_EXHAUSTED, "long_window"),
    (
        500,
        {},
        {"error": "the model needs more memory than the server has"},
        K.MODEL_UNAVAILABLE,
        "resource_message",
    ),
    # a status that agrees decides, with its own confidence
    (404, {}, {"error": "model 'llama3.3' not found, try pulling it first"}, K.NOT_FOUND, "status"),
]


@pytest.mark.parametrize(("status", "headers", "body", "kind", "row"), CONFLICTS)
def test_where_signals_conflict_the_table_says_which_wins(
    status: int, headers: dict[str, str], body: object, kind: K, row: str
) -> None:
    got = provider_error_from_http(status, headers, json.dumps(body).encode())
    assert got.kind is kind, got
    assert f"row={row}" in got.markers, got.markers


# -- the same, through the runtime over loopback sockets -----------------------------------------------------

_SSE = (("content-type", "text/event-stream"),)
_JSON = (("content-type", "application/json"),)


def _script(position: str, status: int, payload: object) -> tuple[Any, ...]:
    if position == "http":
        return (Status(status, _JSON, json.dumps(payload).encode()),)
    if position == "in_band":
        assert isinstance(payload, dict)
        return (Headers(200, _SSE), Send(frame(payload, "error")), End())
    return (Status(200, _JSON, json.dumps(payload).encode()),)


@pytest.fixture(scope="module")
def fault_server() -> Any:
    """One server for every example: the script rides in on a test-only request header."""

    def router(request: Request) -> tuple[Any, ...]:
        position, status, payload = json.loads(request.header("x-test-case") or "[]")
        return _script(position, status, payload)

    with FaultServerThread(router) as server:
        yield server


async def _played(base_url: str, case: str) -> dict[str, Any]:
    run = streamfsm.open_stream(
        "openai-chat",
        base_url=base_url,
        json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
        headers={"x-test-case": case},
        config=StreamConfig(idle_timeout=5, connect_timeout=5, total_timeout=10),
    )
    try:
        async with run:
            async for _ in run:
                pass
    except StreamFailed:
        pass
    assert run.record is not None
    record: dict[str, Any] = json.loads(run.record.to_json())
    return record


WORDS = {
    "long_window": (LONG_WINDOW, (K.QUOTA_EXHAUSTED,), (Verdict.NO_RETRY, Verdict.USER_CONFIRMED_RETRY)),
    "resource": (RESOURCE, (K.MODEL_UNAVAILABLE, K.NOT_FOUND), (Verdict.NO_RETRY,)),
    "cancelled": (CANCELLED, (K.SERVER_ERROR,), (Verdict.SAFE_AUTO_RETRY,)),
    "money": (MONEY, (K.QUOTA_EXHAUSTED,), (Verdict.NO_RETRY,)),
}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.sampled_from(tuple(WORDS)).flatmap(
        lambda w: st.tuples(st.just(w), st.sampled_from(WORDS[w][0]))
    ),
    status=st.sampled_from((400, 499, 500, 503)),
    wrapper=st.sampled_from(("object", "string", "nested")),
    backend=st.sampled_from(("asyncio", "trio")),
)
def test_the_runtime_reads_the_words_the_same_in_every_position(
    fault_server: Any, words: tuple[str, str], status: int, wrapper: str, backend: str
) -> None:
    what, message = words
    _, kinds, verdicts = WORDS[what]
    payload = WRAPPERS[wrapper](message, None, status)
    seen = {}
    for position in POSITIONS:
        case = json.dumps([position, status, payload])
        record = anyio.run(_played, fault_server.base_url, case, backend=backend)
        seen[position] = (record["outcome"]["summary_key"], record["retry"]["verdict"])
    assert len(set(seen.values())) == 1, seen
    key, verdict = seen["http"]
    assert key in {f"provider_error.{k.value}" for k in kinds}, seen
    assert Verdict(verdict) in verdicts, seen
