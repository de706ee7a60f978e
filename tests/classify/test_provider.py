"""Provider errors from HTTP responses, in-band events and SDK exceptions, with realistic bodies."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from email.utils import format_datetime

import anthropic
import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfsm.classify import Confidence, ProviderError, ProviderErrorKind
from streamfsm.classify._provider import (
    parse_retry_after,
    provider_error_from_event,
    provider_error_from_http,
    provider_error_from_sdk,
)

httpx2 = pytest.importorskip("httpx2", reason="httpx2, the newest SDKs' HTTP client, needs Python 3.11")

K = ProviderErrorKind
SECRET = "sk-abc123SECRETxyz"

# -- retry-after ---------------------------------------------------------------------------------------------

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"Retry-After-Ms": "1500", "retry-after": "60"}, 60.0),  # they disagree: the longest wins
        ({"retry-after-ms": "1500", "retry-after": "1"}, 1.5),
        ({"retry-after-ms": "1500", "retry-after": "2"}, 1.5),  # they agree (rounded up): the precise one
        ({"retry-after": "2, 30"}, 30.0),  # a repeated header, joined: the longest wins
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT, 5"}, 5.0),  # a date among them keeps its comma
        # Too large to parse is "longer than the cap", never "absent" (which would retry sooner).
        ({"retry-after": "1234567890123"}, 86_400.0),
        ({"retry-after": "Wed, 21 Oct 99999 07:28:00 GMT"}, 86_400.0),
        ({"retry-after-ms": "99999999999999999"}, 86_400.0),
        ({"retry-after": "5", "retry-after-ms": "1234567890123456"}, 86_400.0),
        ({"retry-after-ms": "soon", "retry-after": "3"}, 3.0),  # garbage ms falls back
        ({"retry-after": format_datetime(datetime.fromtimestamp(NOW + 42, timezone.utc), usegmt=True)}, 42.0),
        ({"retry-after": format_datetime(datetime.fromtimestamp(NOW - 42, timezone.utc), usegmt=True)}, 0.0),
        ({"retry-after": "0"}, 0.0),
        ({"retry-after": "100000"}, 86_400.0),  # capped at a day: beyond that it is nonsense
        ({"retry-after-ms": "99999999"}, 86_400.0),
        ({"retry-after": "1000"}, 1000.0),  # long but real: the retry policy, not the parser, decides
        ({"retry-after": "-5"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "1e3"}, None),
        ({"retry-after": "٣"}, None),  # a digit, but not an ASCII one
        ({"retry-after": "tomorrow"}, None),
        ({"retry-after": ""}, None),
        ({"retry-after-ms": "-1"}, None),
        ({}, None),
        ({"x-other": "5"}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


def test_parse_retry_after_cap_and_header_objects() -> None:
    assert parse_retry_after({"retry-after": "90"}, cap_s=30.0) == 30.0
    assert parse_retry_after(httpx.Headers({"RETRY-AFTER": "12"})) == 12.0
    assert parse_retry_after(httpx2.Headers({"retry-after-ms": "20"})) == 0.02


# -- HTTP errors, per provider -------------------------------------------------------------------------------


def openai_body(message: str, type_: str | None, code: str | None, param: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": type_, "param": param, "code": code}}).encode()


def anthropic_body(type_: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": type_, "message": message}}).encode()


def gemini_body(code: int, status: str, message: str, details: list[object] | None = None) -> bytes:
    error: dict[str, object] = {"code": code, "message": message, "status": status}
    if details is not None:
        error["details"] = details
    return json.dumps({"error": error}).encode()


CASES: list[tuple[str, int, dict[str, str], bytes | str | None, ProviderError]] = [
    (
        "openai 429 rate limit with retry-after seconds",
        429,
        {"retry-after": "20", "x-request-id": "req_1"},
        openai_body(
            "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000.",
            "tokens",
            "rate_limit_exceeded",
        ),
        ProviderError(
            K.RATE_LIMIT,
            status=429,
            type="tokens",
            code="rate_limit_exceeded",
            retry_after_s=20.0,
            markers=(
                "status=429",
                "body.code=rate_limit_exceeded",
                "row=transient_code",
                "header=retry-after",
            ),
        ),
    ),
    (
        "openai 429 quota",
        429,
        {},
        openai_body(
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
            "insufficient_quota",
        ),
        ProviderError(
            K.QUOTA_EXHAUSTED,
            status=429,
            type="insufficient_quota",
            code="insufficient_quota",
            markers=("status=429", "body.code=insufficient_quota", "row=limit_code"),
        ),
    ),
    (
        "openai 400 context overflow",
        400,
        {},
        openai_body(
            "This model's maximum context length is 128000 tokens. However, you requested 130000 tokens.",
            "invalid_request_error",
            "context_length_exceeded",
            "messages",
        ),
        ProviderError(
            K.CONTEXT_OVERFLOW,
            status=400,
            type="invalid_request_error",
            code="context_length_exceeded",
            markers=("status=400", "body.code=context_length_exceeded", "row=must_change_code"),
        ),
    ),
    (
        "openai 400 content filter",
        400,
        {},
        openai_body(
            "Your request was rejected by the safety system.", "invalid_request_error", "content_filter"
        ),
        ProviderError(
            K.CONTENT_FILTER,
            status=400,
            type="invalid_request_error",
            code="content_filter",
            markers=("status=400", "body.code=content_filter", "row=must_change_code"),
        ),
    ),
    (
        "openai 401 invalid key",
        401,
        {},
        openai_body(f"Incorrect API key provided: {SECRET}.", "invalid_request_error", "invalid_api_key"),
        ProviderError(
            K.AUTH,
            status=401,
            type="invalid_request_error",
            code="invalid_api_key",
            markers=("status=401", "body.code=invalid_api_key", "row=must_change_code"),
        ),
    ),
    (
        "openai 429 with retry-after-ms",
        429,
        {"retry-after-ms": "1500", "retry-after": "2"},
        openai_body("Rate limit reached", "requests", "rate_limit_exceeded"),
        ProviderError(
            K.RATE_LIMIT,
            status=429,
            type="requests",
            code="rate_limit_exceeded",
            retry_after_s=1.5,
            markers=(
                "status=429",
                "body.code=rate_limit_exceeded",
                "row=transient_code",
                "header=retry-after-ms",
            ),
        ),
    ),
    (
        "openai 500",
        500,
        {},
        openai_body("The server had an error while processing your request.", "server_error", None),
        ProviderError(K.SERVER_ERROR, status=500, type="server_error", markers=("status=500", "row=status")),
    ),
    (
        "anthropic 529 overloaded",
        529,
        {"x-should-retry": "true", "request-id": "req_2"},
        anthropic_body("overloaded_error", "Overloaded"),
        ProviderError(
            K.OVERLOADED,
            status=529,
            type="overloaded_error",
            should_retry=True,
            markers=(
                "status=529",
                "body.type=overloaded_error",
                "row=transient_code",
                "header=x-should-retry:true",
            ),
        ),
    ),
    (
        "anthropic 429 with an HTTP-date retry-after far ahead (capped)",
        429,
        {"retry-after": "Fri, 31 Dec 2100 23:59:59 GMT"},
        anthropic_body(
            "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
        ),
        ProviderError(
            K.RATE_LIMIT,
            status=429,
            type="rate_limit_error",
            retry_after_s=86_400.0,
            markers=("status=429", "body.type=rate_limit_error", "row=transient_code", "header=retry-after"),
        ),
    ),
    (
        "anthropic 400 prompt too long (message fallback)",
        400,
        {},
        anthropic_body("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
        ProviderError(
            K.CONTEXT_OVERFLOW,
            status=400,
            type="invalid_request_error",
            markers=("status=400", "message=context_overflow", "row=status"),
            confidence=Confidence.LOW,
        ),
    ),
    (
        "anthropic 400 other invalid request",
        400,
        {},
        anthropic_body("invalid_request_error", "messages: roles must alternate"),
        ProviderError(
            K.INVALID_REQUEST, status=400, type="invalid_request_error", markers=("status=400", "row=status")
        ),
    ),
    (
        "anthropic 413",
        413,
        {},
        anthropic_body("request_too_large", "Request exceeds the maximum allowed number of bytes."),
        ProviderError(
            K.REQUEST_TOO_LARGE,
            status=413,
            type="request_too_large",
            markers=("status=413", "body.type=request_too_large", "row=must_change_code"),
        ),
    ),
    (
        "anthropic 401",
        401,
        {},
        anthropic_body("authentication_error", "invalid x-api-key"),
        ProviderError(
            K.AUTH,
            status=401,
            type="authentication_error",
            markers=("status=401", "body.type=authentication_error", "row=must_change_code"),
        ),
    ),
    (
        "anthropic 500 api_error",
        500,
        {},
        anthropic_body("api_error", "Internal server error"),
        ProviderError(K.SERVER_ERROR, status=500, type="api_error", markers=("status=500", "row=status")),
    ),
    (
        "anthropic 503 with x-should-retry false",
        503,
        {"x-should-retry": "false"},
        b"<html>upstream connect error</html>",
        ProviderError(
            K.SERVER_ERROR,
            status=503,
            should_retry=False,
            markers=("status=503", "row=status", "header=x-should-retry:false"),
        ),
    ),
    (
        "gemini 429 rate limit with RetryInfo",
        429,
        {},
        gemini_body(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
            [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {"quotaMetric": "m", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel"}
                    ],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13s"},
            ],
        ),
        ProviderError(
            K.RATE_LIMIT,
            status=429,
            type="RESOURCE_EXHAUSTED",
            code="429",
            retry_after_s=13.0,
            markers=("status=429", "body.details=quota_per_minute", "row=quota_details", "body.retry_delay"),
        ),
    ),
    (
        "gemini 429 per-day quota",
        429,
        {"retry-after": "30"},
        gemini_body(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota.",
            [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
                }
            ],
        ),
        ProviderError(
            K.QUOTA_EXHAUSTED,
            status=429,
            type="RESOURCE_EXHAUSTED",
            code="429",
            retry_after_s=30.0,
            markers=("status=429", "body.details=quota_per_day", "row=quota_details", "header=retry-after"),
        ),
    ),
    (
        "gemini 400 token count (message fallback)",
        400,
        {},
        gemini_body(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        ),
        ProviderError(
            K.CONTEXT_OVERFLOW,
            status=400,
            type="INVALID_ARGUMENT",
            code="400",
            markers=("status=400", "message=context_overflow", "row=status"),
            confidence=Confidence.LOW,
        ),
    ),
    (
        "gemini 400 bad key, in a one-element list",
        400,
        {},
        "["
        + gemini_body(
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
            [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                }
            ],
        ).decode()
        + "]",
        ProviderError(
            K.AUTH,
            status=400,
            type="INVALID_ARGUMENT",
            code="API_KEY_INVALID",
            markers=("status=400", "body.code=API_KEY_INVALID", "row=must_change_code"),
        ),
    ),
    (
        "gemini 403",
        403,
        {},
        gemini_body(403, "PERMISSION_DENIED", "Permission denied on resource project x."),
        ProviderError(
            K.PERMISSION,
            status=403,
            type="PERMISSION_DENIED",
            code="403",
            markers=("status=403", "body.status=PERMISSION_DENIED", "row=transient_code"),
        ),
    ),
    (
        "gemini 503 unavailable",
        503,
        {},
        gemini_body(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
        ProviderError(
            K.OVERLOADED,
            status=503,
            type="UNAVAILABLE",
            code="503",
            markers=("status=503", "body.status=UNAVAILABLE", "row=transient_code"),
        ),
    ),
    (
        "404 without a body",
        404,
        {},
        None,
        ProviderError(K.NOT_FOUND, status=404, markers=("status=404", "row=status")),
    ),
    (
        "408 is transient",
        408,
        {},
        b"",
        ProviderError(
            K.SERVER_ERROR, status=408, markers=("status=408", "row=status"), confidence=Confidence.MEDIUM
        ),
    ),
    (
        "unlisted 4xx",
        418,
        {},
        b"\xff\xfe not json",
        ProviderError(
            K.INVALID_REQUEST, status=418, markers=("status=418", "row=status"), confidence=Confidence.MEDIUM
        ),
    ),
    (
        "error as one SSE event",
        429,
        {},
        'event: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}\n\n',
        ProviderError(
            K.RATE_LIMIT,
            status=429,
            type="rate_limit_error",
            markers=("status=429", "body.type=rate_limit_error", "row=transient_code"),
        ),
    ),
    # Issue 16, item 1: the request alone is over the window's whole budget; no wait can cure it.
    (
        "openai 429 'Request too large' quoting Limit < Requested",
        429,
        {"retry-after": "1"},
        openai_body(
            "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000,"
            " Requested 30601. The input or output tokens must be reduced in order to run successfully.",
            "tokens",
            "rate_limit_exceeded",
        ),
        ProviderError(
            K.REQUEST_TOO_LARGE,
            status=429,
            type="tokens",
            code="rate_limit_exceeded",
            retry_after_s=1.0,
            markers=(
                "status=429",
                "body.code=rate_limit_exceeded",
                "message=requested_over_limit",
                "row=transient_code",
                "header=retry-after",
            ),
            confidence=Confidence.MEDIUM,
        ),
    ),
    (
        "openai 429 that fits the window stays a rate limit (Used + Requested > Limit, Requested < Limit)",
        429,
        {},
        openai_body(
            "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000,"
            " Used 29000, Requested 1500. Please try again in 1.2s. Request too large? No.",
            "tokens",
            "rate_limit_exceeded",
        ),
        ProviderError(
            K.RATE_LIMIT,
            status=429,
            type="tokens",
            code="rate_limit_exceeded",
            retry_after_s=1.2,  # "Please try again in 1.2s", with no header saying otherwise
            markers=("status=429", "body.code=rate_limit_exceeded", "row=transient_code", "message=retry_in"),
        ),
    ),
    (
        "groq 413 with code rate_limit_exceeded: the status says too large",
        413,
        {},
        openai_body(
            "Request too large for model `llama-3.3-70b-versatile` in organization `org_01` service tier"
            " `on_demand` on tokens per minute (TPM): Limit 6000, Requested 7012, please reduce your message"
            " size and try again.",
            "tokens",
            "rate_limit_exceeded",
        ),
        ProviderError(
            K.REQUEST_TOO_LARGE,
            status=413,
            type="tokens",
            code="rate_limit_exceeded",
            markers=("status=413", "body.code=rate_limit_exceeded", "row=transient_code"),
        ),
    ),
    (
        "429 'reduce your message size' without numbers (low confidence)",
        429,
        {},
        openai_body("Please reduce your message size and try again.", "tokens", "rate_limit_exceeded"),
        ProviderError(
            K.REQUEST_TOO_LARGE,
            status=429,
            type="tokens",
            code="rate_limit_exceeded",
            markers=(
                "status=429",
                "body.code=rate_limit_exceeded",
                "message=request_too_large",
                "row=transient_code",
            ),
            confidence=Confidence.LOW,
        ),
    ),
    # Item 2: a size error that is really the context window.
    (
        "anthropic 413 'Request size exceeds model context window'",
        413,
        {},
        anthropic_body("request_too_large", "Request size exceeds model context window"),
        ProviderError(
            K.CONTEXT_OVERFLOW,
            status=413,
            type="request_too_large",
            markers=(
                "status=413",
                "body.type=request_too_large",
                "message=context_overflow",
                "row=must_change_code",
            ),
            confidence=Confidence.LOW,
        ),
    ),
]


@pytest.mark.parametrize(
    ("status", "headers", "body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_provider_error_from_http(
    status: int, headers: dict[str, str], body: bytes | str | None, expected: ProviderError
) -> None:
    got = provider_error_from_http(status, headers, body)
    assert got == expected
    assert SECRET not in repr(got)


def test_provider_error_from_http_accepts_mappings_and_header_objects() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    got = provider_error_from_http(529, httpx.Headers({"Retry-After": "4"}), body)
    assert (got.kind, got.retry_after_s) == (K.OVERLOADED, 4.0)


def test_body_values_that_carry_secrets_are_not_kept() -> None:
    body = {"error": {"type": SECRET, "code": "AKIAIOSFODNN7EXAMPLE", "message": SECRET, "status": SECRET}}
    got = provider_error_from_http(400, {"retry-after": SECRET}, body)
    assert (got.type, got.code, got.retry_after_s) == (None, None, None)
    assert got.kind is K.INVALID_REQUEST
    assert SECRET not in repr(got)
    assert "AKIA" not in repr(got)


def test_hostile_bodies_do_not_raise() -> None:
    nested: object = []
    for _ in range(5000):
        nested = [nested]
    deep_json = "[" * 100_000 + "]" * 100_000
    huge = b'{"error": {"type": "overloaded_error", "message": "' + b"x" * 70_000 + b'"}}'
    for body in (nested, deep_json, huge, b"\x00" * 10, "null", "[]", '{"error": null}', '{"error": "text"}'):
        got = provider_error_from_http(529, None, body)  # type: ignore[arg-type]
        assert got.kind is K.OVERLOADED  # the status still speaks when the body cannot
    assert provider_error_from_event({"error": nested}).kind is K.UNKNOWN


# -- in-band error events ------------------------------------------------------------------------------------

EVENTS: list[tuple[str, Mapping[str, object], ProviderErrorKind, tuple[str, ...]]] = [
    (
        "openai chat chunk error",
        {
            "error": {
                "message": "The server had an error",
                "type": "server_error",
                "param": None,
                "code": None,
            }
        },
        K.SERVER_ERROR,
        ("body.type=server_error", "row=generic_code"),
    ),
    (
        "responses flat error",
        {
            "type": "error",
            "code": "rate_limit_exceeded",
            "message": "slow down",
            "param": None,
            "sequence_number": 3,
        },
        K.RATE_LIMIT,
        ("body.code=rate_limit_exceeded", "row=transient_code"),
    ),
    (
        "responses nested error",
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
                "message": "too long",
            },
        },
        K.CONTEXT_OVERFLOW,
        ("body.code=context_length_exceeded", "row=must_change_code"),
    ),
    (
        "responses response.failed",
        {
            "type": "response.failed",
            "response": {
                "id": "resp_1",
                "status": "failed",
                "error": {"code": "server_error", "message": "x"},
            },
        },
        K.SERVER_ERROR,
        ("body.code=server_error", "row=generic_code"),
    ),
    (
        "responses overloaded",
        {
            "type": "error",
            "error": {"type": "server_error", "code": "server_is_overloaded", "message": "retry"},
        },
        K.OVERLOADED,
        ("body.code=server_is_overloaded", "row=transient_code"),
    ),
    (
        "responses policy block",
        {"type": "response.failed", "response": {"error": {"code": "bio_policy", "message": "blocked"}}},
        K.CONTENT_FILTER,
        ("body.code=bio_policy", "row=must_change_code"),
    ),
    (
        "anthropic event: error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        K.OVERLOADED,
        ("body.type=overloaded_error", "row=transient_code"),
    ),
    (
        "anthropic api_error",
        {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
        K.SERVER_ERROR,
        ("body.type=api_error", "row=generic_code"),
    ),
    (
        "gemini in-band 429",
        {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}},
        K.RATE_LIMIT,
        ("body.status=RESOURCE_EXHAUSTED", "row=transient_code"),
    ),
    (
        "gemini in-band 500 (numeric code decides)",
        {"error": {"code": 500, "message": "An internal error has occurred", "status": "INTERNAL"}},
        K.SERVER_ERROR,
        ("body.code=500", "row=status"),
    ),
    (
        "openrouter numeric 402",
        {"error": {"code": 402, "message": "Insufficient credits"}},
        K.QUOTA_EXHAUSTED,
        ("body.code=402", "row=payment_status"),
    ),
    ("unrecognised event", {"type": "error", "message": "something odd"}, K.UNKNOWN, ("row=nothing",)),
]


@pytest.mark.parametrize(("payload", "kind", "markers"), [e[1:] for e in EVENTS], ids=[e[0] for e in EVENTS])
def test_provider_error_from_event(
    payload: Mapping[str, object], kind: ProviderErrorKind, markers: tuple[str, ...]
) -> None:
    got = provider_error_from_event(payload)
    assert got.kind is kind
    assert got.markers == markers
    assert got.status is None
    assert got.confidence is (Confidence.LOW if kind is K.UNKNOWN else Confidence.HIGH)


def test_responses_flat_event_type_is_not_an_error_type() -> None:
    got = provider_error_from_event({"type": "error", "code": "server_error", "message": "m"})
    assert got.type is None
    assert got.code == "server_error"


# -- SDK exceptions ------------------------------------------------------------------------------------------

REQUEST = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")


def response(status: int, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, headers=headers or {}, request=REQUEST)


def test_openai_status_errors() -> None:
    inner = {
        "message": "Rate limit reached",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    exc = openai.RateLimitError(
        "Error code: 429", response=response(429, {"retry-after-ms": "800"}), body=inner
    )
    got = provider_error_from_sdk(exc)
    assert got is not None
    assert (got.kind, got.status, got.code, got.retry_after_s) == (
        K.RATE_LIMIT,
        429,
        "rate_limit_exceeded",
        0.8,
    )
    assert got.markers[0] == "sdk=openai"

    inner = {
        "message": "too long",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
    got = provider_error_from_sdk(
        openai.BadRequestError("Error code: 400", response=response(400), body=inner)
    )
    assert got is not None
    assert got.kind is K.CONTEXT_OVERFLOW

    got = provider_error_from_sdk(
        openai.AuthenticationError("Error code: 401", response=response(401), body=None)
    )
    assert got is not None
    assert got.kind is K.AUTH


def test_anthropic_status_errors() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    exc = anthropic.APIStatusError(str(body), response=response(529, {"x-should-retry": "true"}), body=body)
    got = provider_error_from_sdk(exc)
    assert got is not None
    assert (got.kind, got.status, got.should_retry) == (K.OVERLOADED, 529, True)

    body = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "prompt is too long: 1 > 0"},
    }
    got = provider_error_from_sdk(anthropic.BadRequestError("x", response=response(400), body=body))
    assert got is not None
    assert (got.kind, got.confidence) == (K.CONTEXT_OVERFLOW, Confidence.LOW)


def test_anthropic_in_band_error_is_classified_from_the_body_not_the_200() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    exc = anthropic.APIStatusError(str(body), response=response(200), body=body)
    assert exc.status_code == 200
    got = provider_error_from_sdk(exc)
    assert got is not None
    assert got.kind is K.OVERLOADED
    assert got.markers == (
        "sdk=anthropic",
        "status=200",
        "body.type=overloaded_error",
        "row=transient_code",
    )


def test_sdk_attributes_are_used_when_the_body_is_unusable() -> None:
    exc = anthropic.APIStatusError("x", response=response(200), body="not json")
    exc.type = "rate_limit_error"
    got = provider_error_from_sdk(exc)
    assert got is not None
    assert got.kind is K.RATE_LIMIT


def test_non_provider_exceptions_give_none() -> None:
    assert provider_error_from_sdk(openai.APIConnectionError(request=REQUEST)) is None
    assert provider_error_from_sdk(openai.APITimeoutError(request=REQUEST)) is None
    assert provider_error_from_sdk(anthropic.APIConnectionError(request=REQUEST)) is None
    assert provider_error_from_sdk(ValueError("sk-abc123SECRETxyz")) is None
    assert provider_error_from_sdk(httpx.ReadError("boom")) is None


# -- real SDK streams against a local peer -------------------------------------------------------------------

WAIT = 3.0


@contextmanager
def one_response(payload: bytes) -> Iterator[int]:
    """Serve one HTTP exchange on 127.0.0.1: read the whole request, send ``payload``, close."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(WAIT)

    def serve() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        try:
            conn.settimeout(WAIT)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
            want = int(length.group(1)) if length else 0
            while len(rest) < want:  # unread request bytes would turn our close into an RST
                chunk = conn.recv(65536)
                if not chunk:
                    return
                rest += chunk
            conn.sendall(payload)
        except OSError:
            pass
        finally:
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        thread.join(WAIT * 2)
        listener.close()
    assert not thread.is_alive()


def sse_response(*events: bytes) -> bytes:
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    return head + chunks + b"0\r\n\r\n"


def caught(run: Callable[[], object]) -> BaseException:
    try:
        run()
    except Exception as exc:
        return exc
    pytest.fail("the stream ended without an error")


def test_real_anthropic_stream_in_band_overload() -> None:
    start = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
        b'"role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,'
        b'"usage":{"input_tokens":1,"output_tokens":0}}}\n\n'
    )
    error = (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    with one_response(sse_response(start, error)) as port:
        client = anthropic.Anthropic(
            base_url=f"http://127.0.0.1:{port}", api_key=SECRET, max_retries=0, timeout=WAIT
        )

        def run() -> None:
            with client.messages.stream(
                model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            ) as s:
                for _ in s:
                    pass

        exc = caught(run)
    assert type(exc).__name__ == "APIStatusError"
    got = provider_error_from_sdk(exc)
    assert got is not None
    assert (got.kind, got.status, got.type) == (K.OVERLOADED, 200, "overloaded_error")
    assert SECRET not in repr(got)


def test_real_openai_stream_in_band_error() -> None:
    chunk = (
        b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
        b'"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    )
    error = b'data: {"error":{"message":"Server error","type":"server_error","param":null,"code":null}}\n\n'
    with one_response(sse_response(chunk, error)) as port:
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key=SECRET, max_retries=0, timeout=WAIT
        )

        def run() -> None:
            stream = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            for _ in stream:
                pass

        exc = caught(run)
    assert type(exc).__name__ == "APIError"  # openai raises the bare base class for in-band errors
    got = provider_error_from_sdk(exc)
    assert got is not None
    assert (got.kind, got.status, got.markers) == (
        K.SERVER_ERROR,
        None,
        ("sdk=openai", "body.type=server_error", "row=generic_code"),
    )


# -- property: anything in, a kind out, no secret ------------------------------------------------------------

_VOCAB = st.sampled_from(
    [
        "error",
        "overloaded_error",
        "rate_limit_error",
        "invalid_request_error",
        "context_length_exceeded",
        "insufficient_quota",
        "RESOURCE_EXHAUSTED",
        "INVALID_ARGUMENT",
        "API_KEY_INVALID",
        "type.googleapis.com/google.rpc.RetryInfo",
        "type.googleapis.com/google.rpc.QuotaFailure",
        "type.googleapis.com/google.rpc.ErrorInfo",
        "GenerateRequestsPerDay",
        "13s",
        "response.failed",
        "prompt is too long",
        SECRET,
        f"key={SECRET}",
    ]
)
_KEYS = st.one_of(
    st.sampled_from(
        [
            *("error", "type", "code", "message", "status", "details", "response", "param", "@type"),
            *("reason", "violations", "quotaId", "retryDelay", "error_code"),
        ]
    ),
    st.text(max_size=8),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(100, 599),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    _VOCAB,
)
_JSONISH = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=5)),
    max_leaves=25,
)
_DICTS = st.dictionaries(_KEYS, _JSONISH, max_size=5)
_ERROR_SHAPED = st.fixed_dictionaries(
    {},
    optional={
        "error": st.one_of(_DICTS, _SCALARS),
        "type": _VOCAB,
        "code": _SCALARS,
        "message": _VOCAB,
        "response": st.fixed_dictionaries({}, optional={"error": _DICTS}),
    },
)
_PAYLOADS = st.one_of(_DICTS, _ERROR_SHAPED)
_HEADER_NAMES = st.one_of(
    st.sampled_from(["retry-after", "Retry-After-Ms", "x-should-retry", "X-Should-Retry", "authorization"]),
    st.text(max_size=10),
)
_HEADER_VALUES = st.one_of(
    _VOCAB,
    st.text(max_size=30),
    st.sampled_from(["5", "1.5", "-1", "true", "false", "Wed, 21 Oct 2015 07:28:00 GMT"]),
)
_MARKER = re.compile(
    r"(status=\d{3}|body\.(code|type|status)[=~][A-Za-z0-9_.\-]+"
    r"|body\.details=quota_per_(hour|day|week|month|minute|second)"
    r"|body\.retry_delay|header=retry-after(-ms)?(:over_limit)?|header=x-should-retry:(true|false)"
    r"|header=(x|anthropic)-ratelimit-[a-z-]+-reset|header=x-ratelimit-reset-[a-z]+"
    r"|message=(context_overflow|requested_over_limit|request_too_large|rate_limit|overloaded|server_busy"
    r"|retry_in|short_window|long_window|cancelled)|stated_wait=short"
    r"|message=(money|resource):[a-z_]+|sdk=(openai|anthropic)|row=[a-z_]+)"
)


def _check(got: ProviderError) -> None:
    assert isinstance(got.kind, ProviderErrorKind)
    assert SECRET not in repr(got)
    assert "abc123SECRET" not in repr(got)
    assert got.retry_after_s is None or 0.0 <= got.retry_after_s <= 300.0
    assert all(_MARKER.fullmatch(m) for m in got.markers), got.markers
    for value in (got.type, got.code):
        assert value is None or re.fullmatch(r"[A-Za-z][A-Za-z0-9_.\-]{0,63}|[1-5][0-9][0-9]", value)


@given(
    status=st.one_of(st.integers(), st.integers(100, 599), st.sampled_from([200, 400, 401, 429, 500, 529])),
    headers=st.one_of(st.none(), st.dictionaries(_HEADER_NAMES, _HEADER_VALUES, max_size=4)),
    body=st.one_of(
        st.none(),
        _PAYLOADS,
        _PAYLOADS.map(lambda v: [v]),
        _JSONISH.map(lambda v: json.dumps(v, default=str)),
        _JSONISH.map(lambda v: json.dumps(v, default=str).encode()),
        st.binary(max_size=64),
        st.text(max_size=64),
    ),
)
def test_any_http_error_gives_a_kind_and_keeps_no_secret(
    status: int, headers: dict[str, str] | None, body: bytes | str | Mapping[str, object] | None
) -> None:
    _check(provider_error_from_http(status, headers, body))


@given(_PAYLOADS)
def test_any_event_gives_a_kind_and_keeps_no_secret(payload: dict[str, object]) -> None:
    _check(provider_error_from_event(payload))


@given(status=st.integers(100, 599), body=st.one_of(_PAYLOADS, _JSONISH))
def test_any_sdk_error_gives_a_kind_and_keeps_no_secret(status: int, body: object) -> None:
    exc = anthropic.APIStatusError(SECRET, response=response(status), body=body)
    got = provider_error_from_sdk(exc)
    assert got is not None
    _check(got)


# -- words, not exact codes (issue 29, root 3) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "kind", "marker"),
    [
        # the case: a nested Responses error whose code is too_many_requests
        (
            {"type": "error", "error": {"code": "too_many_requests", "message": "Too many requests"}},
            K.RATE_LIMIT,
            "body.code=too_many_requests",
        ),
        (
            {"type": "response.failed", "response": {"error": {"code": "insufficient_quota", "message": ""}}},
            K.QUOTA_EXHAUSTED,
            "body.code=insufficient_quota",
        ),
        # a code that is not an identifier is matched, never kept: the rule's words mark it
        ({"error": {"code": "Too Many Requests"}}, K.RATE_LIMIT, "body.code~too_many_requests"),
        ({"error": {"type": "ThrottlingException"}}, K.RATE_LIMIT, "body.type=ThrottlingException"),
        ({"error": {"code": "429", "message": "slow down"}}, K.RATE_LIMIT, "body.code=429"),
        # a quota per minute is a rate limit
        (
            {"error": {"code": "quota_per_minute_exceeded"}},
            K.RATE_LIMIT,
            "body.code=quota_per_minute_exceeded",
        ),
        (
            {"error": {"code": "TokensPerMinQuotaExceeded"}},
            K.RATE_LIMIT,
            "body.code=TokensPerMinQuotaExceeded",
        ),
        # a gateway's load balance error is not money
        ({"error": {"type": "LoadBalanceError", "code": 503}}, K.SERVER_ERROR, "body.code=503"),
        # OpenRouter's in-flight reservation is not money
        (
            {"error": {"code": "in_flight_budget_exhausted"}},
            K.RATE_LIMIT,
            "body.code=in_flight_budget_exhausted",
        ),
        ({"detail": "Max budget limit reached."}, K.QUOTA_EXHAUSTED, "message=money:budget"),
        # a token, thinking or time budget is not money: the rest of the error decides
        (
            {"error": {"code": "rate_limit_exceeded", "message": "Per-minute token budget exceeded."}},
            K.RATE_LIMIT,
            "body.code=rate_limit_exceeded",
        ),
        ({"error": {"code": 500, "message": "Thinking budget exceeded"}}, K.SERVER_ERROR, "body.code=500"),
        (
            {"error": {"code": "TokenBudgetExceeded", "message": "slow down", "status": "UNAVAILABLE"}},
            K.OVERLOADED,
            "body.status=UNAVAILABLE",
        ),
        # money words are whole words: "credited" is not "credits", "spend capacity" not a "spend cap"
        (
            {"error": {"code": 503, "message": "No credited capacity on this node; spend capacity later"}},
            K.SERVER_ERROR,
            "body.code=503",
        ),
        # a quota or usage limit per minute is a rate limit, as a code per minute is
        (
            {"error": {"message": "You exceeded your quota of 60 requests per minute."}},
            K.RATE_LIMIT,
            "message=short_window",
        ),
        (
            {"error": {"code": "overloaded_error", "message": "Usage limit (TPM) reached"}},
            K.OVERLOADED,
            "body.code=overloaded_error",
        ),
        # Zhipu's coding plan: five hours' use spent, a 429 rate_limit_error (in Chinese as in English)
        (
            {
                "type": "error",
                "error": {
                    "type": "rate_limit_error",
                    "code": "1308",
                    "message": "已达到 5 小时的使用上限。您的限额将在 2026-07-05 14:21:10 重置。",
                },
            },
            K.QUOTA_EXHAUSTED,
            "message=money:usage_limit",
        ),
        (
            {"error": {"code": 429, "message": "每分钟配额不足 请稍后再试"}},
            K.RATE_LIMIT,
            "message=short_window",
        ),
        # Alibaba Model Studio's rate quota is a rate limit ("Requests rate limit exceeded, please try again")
        (
            {"error": {"code": "Throttling.RateQuota", "message": "Requests rate limit exceeded"}},
            K.RATE_LIMIT,
            "body.code=Throttling.RateQuota",
        ),
        # a daily or monthly limit with no stated wait is a plan limit (OpenRouter in-band, Cohere trial key)
        (
            {"error": {"message": "Rate limit exceeded: free-models-per-day. Add 10 credits", "code": 429}},
            K.QUOTA_EXHAUSTED,
            "message=money:plan_window",
        ),
        # ... but with a stated wait, the wait decides (Groq's per-day tokens)
        (
            {"error": {"message": "Limit on tokens per day (TPD). Please try again in 9m38s.", "code": 429}},
            K.RATE_LIMIT,
            "message=retry_in",
        ),
        ({"error": "Rate limit exceeded"}, K.RATE_LIMIT, "message=rate_limit"),
    ],
)
def test_codes_are_read_as_words_in_events(
    payload: dict[str, object], kind: ProviderErrorKind, marker: str
) -> None:
    got = provider_error_from_event(payload)
    assert got.kind is kind
    assert marker in got.markers


def test_a_monthly_limit_without_a_stated_wait_is_a_plan_limit() -> None:
    body = {"message": "You are using a Trial key, which is limited to 1000 API calls / month."}  # Cohere
    got = provider_error_from_http(429, {}, json.dumps(body))
    assert got.kind is K.QUOTA_EXHAUSTED and got.confidence is Confidence.LOW
    assert "message=money:plan_window" in got.markers
    # the window says when it lifts: a 30 s retry-after on a monthly limit is no reset, never automatic
    assert provider_error_from_http(429, {"retry-after": "30"}, json.dumps(body)).kind is K.QUOTA_EXHAUSTED
    # a wait the provider states past an automatic retry is kept: the verdict asks
    later = provider_error_from_http(429, {"retry-after": "7200"}, json.dumps(body))
    assert (later.kind, later.retry_after_s) == (K.RATE_LIMIT, 7200.0)


def test_gemini_per_minute_details_decide_over_money_words() -> None:
    details = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}],
        }
    ]
    body = gemini_body(
        429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan.", details
    )
    got = provider_error_from_http(429, {}, body)
    assert got.kind is K.RATE_LIMIT and got.confidence is Confidence.HIGH
    assert "body.details=quota_per_minute" in got.markers


@pytest.mark.parametrize(
    ("message", "seconds"),
    [
        ("Please try again in 9m38.016s. Need more tokens?", 578.016),  # Groq
        ("Please retry in 10h17m5.5s.", 37025.5),  # Gemini free tier
        ("Please try again in 20ms.", 0.02),  # OpenAI
        ("Your limit resets in 5 hours.", 18000.0),
        ("have exceeded token rate limit of your current pricing tier. Please retry after 2 seconds.", 2.0),
        ("Please try again in 1 minute and 30 seconds", 90.0),
        ("Please try again later.", None),
    ],
)
def test_a_wait_stated_in_words_is_the_retry_after(message: str, seconds: float | None) -> None:
    got = provider_error_from_http(429, {}, openai_body(message, "tokens", "rate_limit_exceeded"))
    assert got.retry_after_s == pytest.approx(seconds) if seconds is not None else got.retry_after_s is None
    assert ("message=retry_in" in got.markers) is (seconds is not None)


def test_the_reset_of_an_exhausted_limit_is_the_retry_after() -> None:
    headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "2h0m0s",
        "x-ratelimit-remaining-tokens": "1200",
        "x-ratelimit-reset-tokens": "99h",  # not exhausted: says nothing about this request
    }
    got = provider_error_from_http(
        429, headers, openai_body("Rate limit reached", "requests", "rate_limit_exceeded")
    )
    assert got.retry_after_s == 7200.0 and "header=x-ratelimit-reset-requests" in got.markers
    later = datetime.fromtimestamp(time.time() + 3 * 3600, timezone.utc).isoformat().replace("+00:00", "Z")
    anthropic_headers = {
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": later,
    }
    got = provider_error_from_http(429, anthropic_headers, anthropic_body("rate_limit_error", "Rate limited"))
    assert got.retry_after_s is not None and 3 * 3600 - 60 < got.retry_after_s <= 3 * 3600
    # retry-after, when given, wins
    got = provider_error_from_http(429, {**headers, "retry-after": "3"}, b"{}")
    assert got.retry_after_s == 3.0


def test_openai_sdk_error_with_a_text_body_is_read_as_the_message() -> None:
    # openai unwraps xAI's {"code": ..., "error": "text"} to the text
    text = "Your team t1 has either used all available credits or reached its monthly spending limit."
    exc = openai.PermissionDeniedError("Error code: 403", response=response(403), body=text)
    got = provider_error_from_sdk(exc)
    assert got is not None and got.kind is K.QUOTA_EXHAUSTED
    assert "message=money:credits" in got.markers and text not in repr(got)


def test_llama_cpp_context_size_errors_are_context_overflow() -> None:
    # llama.cpp's server: type exceed_context_size_error (newer builds), or only the words (older ones)
    by_type = provider_error_from_event(
        {
            "error": {
                "code": 400,
                "message": "request (9000 tokens) exceeds the available context size (8192 tokens)",
                "type": "exceed_context_size_error",
            }
        }
    )
    assert by_type.kind is K.CONTEXT_OVERFLOW
    by_words = provider_error_from_event(
        {
            "code": 400,
            "message": "the request exceeds the available context size. try increasing the context size",
            "type": "invalid_request_error",
        }
    )
    assert by_words.kind is K.CONTEXT_OVERFLOW
    assert by_words.confidence is Confidence.LOW


def test_a_quota_that_resets_within_a_minute_is_a_rate_limit() -> None:
    # Gemini's per-minute limit, its QuotaFailure details stripped by a proxy: the words say "quota", the
    # RetryInfo says seconds. OpenAI's insufficient_quota (no wait cures it) stays quota_exhausted.
    words = {"code": 429, "message": "You exceeded your current quota.", "status": "RESOURCE_EXHAUSTED"}
    retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}
    got = provider_error_from_http(429, {}, {"error": {**words, "details": [retry]}})
    assert (got.kind, got.retry_after_s) == (K.RATE_LIMIT, 2.0)
    no_wait = provider_error_from_http(429, {}, {"error": words})
    assert no_wait.kind is K.QUOTA_EXHAUSTED
    far = {**retry, "retryDelay": "7200s"}
    assert provider_error_from_http(429, {}, {"error": {**words, "details": [far]}}).kind is K.QUOTA_EXHAUSTED
    openai = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    assert provider_error_from_http(429, {"retry-after": "20"}, openai).kind is K.QUOTA_EXHAUSTED


def test_every_text_a_wrapper_carries_is_read_not_only_its_first_message() -> None:
    # A gateway's 429 says "rate limit" in its message while its detail quotes the upstream's words: money,
    # which no wait cures (letta-ai/letta#3304 shows such a detail).
    body = {
        "message": "Rate limit exceeded for LLM model provider. Please wait before making another request.",
        "detail": "RATE_LIMIT_EXCEEDED: Error code: 429 - {'error': {'code': '1113', 'message': 'Insufficient"
        " balance or no resource package. Please recharge.'}}",
    }
    error = provider_error_from_http(429, {}, json.dumps(body).encode())
    assert error.kind is ProviderErrorKind.QUOTA_EXHAUSTED, error
    # However long an inner text is, the outer one's words are read too.
    long_inner = {
        "error": {"message": "Rate limited", "error": {"message": "x" * 2100}},
        "message": "insufficient balance",
    }
    error = provider_error_from_http(429, {}, json.dumps(long_inner).encode())
    assert error.kind is ProviderErrorKind.QUOTA_EXHAUSTED, error
