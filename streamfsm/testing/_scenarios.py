"""The scenario catalog: every fault the taxonomy names, for each wire format that has its shape, as data.

Each `Scenario` is a fault script (what the fault server does on the wire), the part the agent plays
(`Agent`: which tool effects it declares, whether it aborts or cancels), and the outcome the taxonomy says
the run must have: class, verdict, edge and phase (and often cause, action and retry-after). The
expectations are written here by hand from the rules in ``streamfsm.classify._diagnose`` and
``_provider``; nothing here calls the classifier, so the harness checks the runtime against the taxonomy
rather than against itself.

Names are stable and read ``<format>/<fault>``, e.g. ``openai-chat/text-then-fin``::

    from streamfsm.testing import catalog, find

    everything = catalog()                               # all formats
    anthropic = catalog(["anthropic"])                   # one format
    scenario = find("anthropic/tool-args-cut")           # one scenario, by name

Writing your own scenario is writing data the same way; `run_scenario` and the pytest fixture accept it::

    from streamfsm import FailureClass, Phase, Trigger, Verdict
    from streamfsm.testing import Agent, Fin, Headers, Scenario, Send, tool_call_stream

    frames = tool_call_stream("anthropic", [("write_file", '{"path": "notes.md"}')])
    mine = Scenario(
        "mine/write-file-then-fin",
        (Headers(), *(Send(f) for f in frames[:-2]), Fin()),   # the call completes, then the peer leaves
        format="anthropic",
        agent=Agent(tools={"write_file": "effectful"}),          # the agent declares the tool's effect
        expected_class=FailureClass.TOOL_SIDE_EFFECT,           # or the plain strings: "tool_side_effect"
        expected_verdict=Verdict.NO_RETRY,
        expected_edge=Trigger.DISCONNECTED,
        expected_phase=Phase.TOOL_EXECUTION,
        config={"idle_timeout": 5.0},                           # StreamConfig overrides
    )

Real-world wire shapes (providers, gateways and local servers, each with its public source) are rows of
``_realworld``, joined to the family they belong to.

Formats without a shape get no scenario rather than a pretend one: Gemini sends whole function calls (no
argument stream to cut, so its honest equivalent is a cut inside the chunk that carries the call), has no
``x-should-retry`` header and puts its retry delay in the body (``RetryInfo``), and reports a bad API key
as ``400 INVALID_ARGUMENT`` with reason ``API_KEY_INVALID``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Any, Final

from ..classify import AbortSource, Action, FailureClass, Phase, Verdict
from ..machine import Trigger
from ..wire import format_named
from ._answers import whole_answer
from ._eventstream import CONTENT_TYPE as EVENT_STREAM
from ._eventstream import converse, converse_event, damaged
from ._eventstream import exception as aws_exception
from ._realworld import FAMILIES as REAL_WORLD_FAMILIES
from ._realworld import rows as real_world_rows
from ._script import (
    Agent,
    End,
    Fin,
    HeaderPairs,
    Headers,
    Keepalive,
    NextCreate,
    Rst,
    Scenario,
    Send,
    SendRaw,
    Stall,
    Status,
    Step,
    Upgrade,
    WsClose,
    cut_chunk,
)
from ._tool_kinds import rows as tool_kind_rows
from ._wire import (
    EVENT_STREAM_FORMATS,
    NDJSON_FORMATS,
    WIRE_FORMATS,
    Format,
    build,
    error_event,
    frame,
    keepalive,
    text_stream,
    tool_call_stream,
)

__all__ = ["WATCHDOG_S", "catalog", "find", "names"]

WATCHDOG_S: Final = 0.3
"""The watchdog deadline (seconds) the catalog's stall scenarios configure: short, so a run takes seconds."""

_C, _V, _A, _P, _T = FailureClass, Verdict, Action, Phase, Trigger

# Unique strings, so a frame can be found by what it carries (never by running the adapters).
TEXT: Final = ("Hello", " world", ", again")
REASONING: Final = ("Considering the question", " carefully")
PATCH_ARGS: Final = '{"patch": "' + "x" * 60 + '"}'
JSON_HEADERS: Final = (("content-type", "application/json"),)


def _escaped(text: str) -> bytes:
    """``text`` as it appears inside a JSON string on the wire."""
    return json.dumps(text, ensure_ascii=False)[1:-1].encode()


def _index(frames: Sequence[bytes], *markers: bytes, start: int = 0) -> int:
    for index in range(start, len(frames)):
        if all(marker in frames[index] for marker in markers):
            return index
    raise ValueError(f"no frame carries {markers!r}")  # a bug in this catalog, found at import by the tests


def _through(frames: Sequence[bytes], *markers: bytes) -> list[bytes]:
    """The frames up to and including the first one carrying every marker."""
    return list(frames[: _index(frames, *markers) + 1])


def _before(frames: Sequence[bytes], *markers: bytes) -> list[bytes]:
    """The frames before the first one carrying every marker."""
    return list(frames[: _index(frames, *markers)])


def _call_complete(fmt: Format, frames: Sequence[bytes]) -> list[bytes]:
    """The frames through the one that completes the first tool call, per format."""
    if fmt == "openai-chat":  # the finish_reason chunk closes the open call; only [DONE] is terminal
        return _through(frames, b'"finish_reason":"tool_calls"')
    if fmt == "openai-responses":
        return _through(frames, b'"response.output_item.done"', b'"function_call"')
    if fmt == "anthropic":  # the content_block_stop of the tool_use block
        start = _index(frames, b'"tool_use"')
        return list(frames[: _index(frames, b"content_block_stop", start=start) + 1])
    return _through(frames, b'"functionCall"')  # gemini: a whole call in one chunk


_SSE_HEAD: Final = Headers()  # 200, text/event-stream


def _play(frames: Iterable[bytes], *tail: Step, head: Headers = _SSE_HEAD) -> tuple[Step, ...]:
    """``head`` (SSE's headers unless told), one chunk per frame, then ``tail``."""
    return (head, *(Send(frame) for frame in frames), *tail)


def _expect(
    klass: FailureClass,
    verdict: Verdict,
    edge: Trigger | None,
    phase: Phase,
    cause: str | None = None,
    action: Action | None = None,
    retry_after: float | None = None,
) -> dict[str, Any]:
    return {
        "expected_class": klass,
        "expected_verdict": verdict,
        "expected_edge": edge,
        "expected_phase": phase,
        "expected_cause": cause,
        "expected_action": action,
        "expected_retry_after_s": retry_after,
    }


COMPLETED: Final = _expect(_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE)


def _safe(
    klass: FailureClass, edge: Trigger, phase: Phase, cause: str, action: Action = _A.RETRY
) -> dict[str, Any]:
    return _expect(klass, _V.SAFE_AUTO_RETRY, edge, phase, cause, action)


def _shown(klass: FailureClass, edge: Trigger, cause: str) -> dict[str, Any]:
    """A failure after visible text: the user must confirm a retry, the partial answer stays."""
    return _expect(klass, _V.USER_CONFIRMED_RETRY, edge, _P.MID_GENERATION, cause, _A.CONTINUE_WITH_PARTIAL)


# -- HTTP error responses, per provider ----------------------------------------------------------------------


def _openai_error(message: str, type_: str, code: str | None, param: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": type_, "param": param, "code": code}}).encode()


def _anthropic_error(type_: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": type_, "message": message}}).encode()


def _gemini_error(code: int, status: str, message: str, details: list[dict[str, Any]] | None = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return json.dumps({"error": error}, indent=2).encode()


_OPENAI_HEADERS: Final = (*JSON_HEADERS, ("x-request-id", "req_8f1a2b3c4d5e6f708192a3b4c5d6e7f8"))
_ANTHROPIC_HEADERS: Final = (*JSON_HEADERS, ("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy"))
_GEMINI_HEADERS: Final = (
    ("content-type", "application/json; charset=UTF-8"),
    ("server", "scaffolding on HTTPServer2"),
)
_HTML_413: Final = (
    b"<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
    b"<center><h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)
_GOOGLE_413: Final = (
    b"<!DOCTYPE html>\n<html lang=en>\n  <meta charset=utf-8>\n"
    b"  <title>Error 413 (Request Entity Too Large)!!1</title>\n"
    b"  <p><b>413.</b> <ins>That\xe2\x80\x99s an error.</ins>\n"
    b"  <p>Your client issued a request that was too large.  <ins>That\xe2\x80\x99s all we know.</ins>\n"
)


_TPM_TOO_LARGE: Final = _openai_error(
    "Request too large for gpt-4o in organization org-Zx9 on tokens per min (TPM): Limit 30000, Requested"
    " 30601. The input or output tokens must be reduced in order to run successfully. Visit"
    " https://platform.openai.com/account/rate-limits to learn more.",
    "tokens",
    "rate_limit_exceeded",
)
_GROQ_413: Final = _openai_error(
    "Request too large for model `llama-3.3-70b-versatile` in organization `org_01jd` service tier"
    " `on_demand` on tokens per minute (TPM): Limit 6000, Requested 7012, please reduce your message size"
    " and try again.",
    "tokens",
    "rate_limit_exceeded",
)


def _http(cause: str, verdict: Verdict, action: Action, retry_after: float | None = None) -> dict[str, Any]:
    return _expect(
        _C.PROVIDER_ERROR, verdict, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, cause, action, retry_after
    )


def _http_errors(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any]]]:
    """(slug, description, script, expectation) for each HTTP error the provider behind ``fmt`` sends."""
    backoff, safe = _A.RETRY_AFTER_BACKOFF, _V.SAFE_AUTO_RETRY
    if fmt in ("openai-chat", "openai-responses"):
        h = _OPENAI_HEADERS
        limited = _openai_error(
            "Rate limit reached for gpt-4o-mini in organization org-Zx9 on requests per min (RPM): Limit 500,"
            " Used 500, Requested 1. Please try again in 2s.",
            "requests",
            "rate_limit_exceeded",
        )
        # An HTTP date already past means "retry now" (RFC 9110): an exact expectation that needs neither the
        # clock nor the classifier's cap, and a date the parser failed on would leave no delay at all.
        date = "Wed, 21 Oct 2015 07:28:00 GMT"
        return [
            (
                "http-429-retry-after",
                "429 with retry-after in seconds",
                (Status(429, (*h, ("retry-after", "2"), ("x-ratelimit-remaining-requests", "0")), limited),),
                _http("rate_limit", safe, backoff, 2.0),
            ),
            (
                "http-429-retry-after-ms",
                "429 with retry-after-ms (preferred over retry-after)",
                (Status(429, (*h, ("retry-after-ms", "1500"), ("retry-after", "2")), limited),),
                _http("rate_limit", safe, backoff, 1.5),
            ),
            (
                "http-429-retry-after-date",
                "429 with retry-after as an HTTP date, one already past: retry now (0 s)",
                (Status(429, (*h, ("retry-after", date)), limited),),
                _http("rate_limit", safe, backoff, 0.0),
            ),
            (
                "http-503-overloaded",
                "503 'overloaded' from OpenAI: no specific code, so the status decides (server_error)",
                (
                    Status(
                        503,
                        h,
                        _openai_error(
                            "That model is currently overloaded with other requests."
                            " You can retry your request.",
                            "server_error",
                            None,
                        ),
                    ),
                ),
                _http("server_error", safe, backoff),
            ),
            (
                "http-500",
                "500 server_error",
                (
                    Status(
                        500,
                        h,
                        _openai_error(
                            "The server had an error while processing your request. Sorry about that!",
                            "server_error",
                            None,
                        ),
                    ),
                ),
                _http("server_error", safe, backoff),
            ),
            (
                "http-503-should-not-retry",
                "503 with x-should-retry: false",
                (
                    Status(
                        503,
                        (*h, ("x-should-retry", "false")),
                        _openai_error("Service Unavailable", "server_error", None),
                    ),
                ),
                _http("server_error", _V.NO_RETRY, _A.STOP),
            ),
            (
                "http-401",
                "401 invalid_api_key (the body quotes part of the key; it must not reach the record)",
                (
                    Status(
                        401,
                        h,
                        _openai_error(
                            "Incorrect API key provided: sk-proj-********************abcd."
                            " You can find your API key at https://platform.openai.com/account/api-keys.",
                            "invalid_request_error",
                            "invalid_api_key",
                        ),
                    ),
                ),
                _http("auth", _V.NO_RETRY, _A.FIX_REQUEST),
            ),
            (
                "http-400-context-overflow",
                "400 context_length_exceeded",
                (
                    Status(
                        400,
                        h,
                        _openai_error(
                            "This model's maximum context length is 128000 tokens. However, your messages"
                            " resulted in 131072 tokens. Please reduce the length of the messages.",
                            "invalid_request_error",
                            "context_length_exceeded",
                            "messages",
                        ),
                    ),
                ),
                _http("context_overflow", _V.NO_RETRY, _A.FIX_REQUEST),
            ),
            (
                "http-413",
                "413 from the front proxy, as HTML",
                (Status(413, (("content-type", "text/html"), ("server", "cloudflare")), _HTML_413),),
                _http("request_too_large", _V.NO_RETRY, _A.FIX_REQUEST),
            ),
            (
                "http-429-request-too-large",
                "429 rate_limit_exceeded whose request alone is over the per-minute budget (Limit 30000,"
                " Requested 30601): no wait can cure it, so it is request_too_large, never retried",
                (Status(429, (*h, ("retry-after", "1")), _TPM_TOO_LARGE),),
                _http("request_too_large", _V.NO_RETRY, _A.FIX_REQUEST, 1.0),
            ),
            (
                "http-413-rate-limit-code",
                "Groq's 413 with code rate_limit_exceeded ('please reduce your message size'): the status"
                " says too large, the code only names the limit",
                (Status(413, h, _GROQ_413),),
                _http("request_too_large", _V.NO_RETRY, _A.FIX_REQUEST),
            ),
            (
                "http-429-retry-after-conflicting",
                "429 whose retry-after-ms (1500) and retry-after (30) disagree: the longest wins",
                (Status(429, (*h, ("retry-after-ms", "1500"), ("retry-after", "30")), limited),),
                _http("rate_limit", safe, backoff, 30.0),
            ),
            (
                "http-429-retry-after-over-limit",
                "429 with a 13-digit retry-after: too large to parse is longer than the cap (a day), never"
                " 'no delay given', and far too long for an automatic retry",
                (Status(429, (*h, ("retry-after", "1234567890123")), limited),),
                _http("rate_limit", _V.USER_CONFIRMED_RETRY, _A.ASK_USER, 86_400.0),
            ),
        ]
    if fmt == "anthropic":
        h = _ANTHROPIC_HEADERS
        return [
            (
                "http-429-retry-after",
                "429 rate_limit_error with retry-after in seconds",
                (
                    Status(
                        429,
                        (*h, ("retry-after", "2"), ("anthropic-ratelimit-requests-remaining", "0")),
                        _anthropic_error(
                            "rate_limit_error",
                            "Number of request tokens has exceeded your per-minute rate limit (https://docs."
                            "claude.com/en/api/rate-limits); see the response headers for current usage.",
                        ),
                    ),
                ),
                _http("rate_limit", safe, backoff, 2.0),
            ),
            (
                "http-529-overloaded",
                "529 overloaded_error",
                (
                    Status(
                        529,
                        (*h, ("x-should-retry", "true")),
                        _anthropic_error("overloaded_error", "Overloaded"),
                    ),
                ),
                _http("overloaded", safe, backoff),
            ),
            (
                "http-500",
                "500 api_error",
                (Status(500, h, _anthropic_error("api_error", "Internal server error")),),
                _http("server_error", safe, backoff),
            ),
            (
                "http-503-should-not-retry",
                "503 with x-should-retry: false",
                (
                    Status(
                        503,
                        (*h, ("x-should-retry", "false")),
                        _anthropic_error("api_error", "Service unavailable"),
                    ),
                ),
                _http("server_error", _V.NO_RETRY, _A.STOP),
            ),
            (
                "http-401",
                "401 authentication_error",
                (Status(401, h, _anthropic_error("authentication_error", "invalid x-api-key")),),
                _http("auth", _V.NO_RETRY, _A.FIX_REQUEST),
            ),
            (
                "http-400-context-overflow",
                "400 invalid_request_error 'prompt is too long' (told only in words: low confidence)",
                (
                    Status(
                        400,
                        h,
                        _anthropic_error(
                            "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
                        ),
                    ),
                ),
                _http("context_overflow", _V.NO_RETRY, _A.FIX_REQUEST),
            ),
            (
                "http-413",
                "413 request_too_large",
                (
                    Status(
                        413,
                        h,
                        _anthropic_error(
                            "request_too_large", "Request exceeds the maximum allowed number of bytes."
                        ),
                    ),
                ),
                _http("request_too_large", _V.NO_RETRY, _A.FIX_REQUEST),
            ),
            (
                "http-413-context-window",
                "413 request_too_large 'Request size exceeds model context window': a context overflow",
                (
                    Status(
                        413,
                        h,
                        _anthropic_error("request_too_large", "Request size exceeds model context window"),
                    ),
                ),
                _http("context_overflow", _V.NO_RETRY, _A.FIX_REQUEST),
            ),
        ]
    h = _GEMINI_HEADERS
    retry_info: list[dict[str, Any]] = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                    "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                }
            ],
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"},
    ]
    key_invalid = [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        }
    ]
    return [
        (
            "http-429-retry-delay",
            "429 RESOURCE_EXHAUSTED with its retry delay in the body (RetryInfo), per-minute quota",
            (
                Status(
                    429,
                    h,
                    _gemini_error(
                        429,
                        "RESOURCE_EXHAUSTED",
                        "You exceeded your current quota, please check your plan and billing details.",
                        retry_info,
                    ),
                ),
            ),
            _http("rate_limit", safe, backoff, 17.0),
        ),
        (
            "http-503-overloaded",
            "503 UNAVAILABLE: the model is overloaded",
            (
                Status(
                    503,
                    h,
                    _gemini_error(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
                ),
            ),
            _http("overloaded", safe, backoff),
        ),
        (
            "http-500",
            "500 INTERNAL",
            (
                Status(
                    500,
                    h,
                    _gemini_error(
                        500, "INTERNAL", "An internal error has occurred. Please retry or report it."
                    ),
                ),
            ),
            _http("server_error", safe, backoff),
        ),
        (
            "http-400-api-key-invalid",
            "Gemini's 401: 400 INVALID_ARGUMENT with reason API_KEY_INVALID",
            (
                Status(
                    400,
                    h,
                    _gemini_error(
                        400,
                        "INVALID_ARGUMENT",
                        "API key not valid. Please pass a valid API key.",
                        key_invalid,
                    ),
                ),
            ),
            _http("auth", _V.NO_RETRY, _A.FIX_REQUEST),
        ),
        (
            "http-400-context-overflow",
            "400 INVALID_ARGUMENT: input token count over the limit (told only in words: low confidence)",
            (
                Status(
                    400,
                    h,
                    _gemini_error(
                        400,
                        "INVALID_ARGUMENT",
                        "The input token count (1200000) exceeds the maximum number of tokens"
                        " allowed (1048576).",
                    ),
                ),
            ),
            _http("context_overflow", _V.NO_RETRY, _A.FIX_REQUEST),
        ),
        (
            "http-413",
            "413 from Google's front end, as HTML",
            (Status(413, (("content-type", "text/html; charset=UTF-8"),), _GOOGLE_413),),
            _http("request_too_large", _V.NO_RETRY, _A.FIX_REQUEST),
        ),
    ]


# -- streams -------------------------------------------------------------------------------------------------


_MALFORMED: Final[dict[str, bytes]] = {
    # A frame cut inside its JSON and closed as if complete (what a buggy proxy that splits lines sends).
    "openai-chat": b'data: {"id":"chatcmpl-B9MHDbslfkBeAs8l4bebG","choices":[{"index":0,"delta":{"cont\n\n',
    "openai-responses": b'event: response.output_text.delta\ndata: {"type":"response.output_text.de\n\n',
    "anthropic": b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta"\n\n',
    "gemini": b'data: {"candidates": [{"content": {"parts": [{"text": "Hel\r\n\r\n',
}


def _shared_faults(
    fmt: Format, head: Headers, malformed: bytes, said: Mapping[str, str]
) -> dict[str, tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """The streaming faults the SSE formats and Ollama's NDJSON share, by slug. They differ only in the
    ``head`` that opens the body, the ``malformed`` piece (a frame or line cut off inside its JSON) and some
    words: ``said`` replaces a description (the defaults speak of SSE)."""
    text = text_stream(fmt, TEXT)
    thought = text_stream(fmt, TEXT, reasoning=REASONING)
    hello = _escaped(TEXT[0])
    preamble = _before(text, hello)  # headers' worth of bookkeeping: nothing the user sees (none in NDJSON)
    through_text = _through(text, hello)
    D, EOF = _T.DISCONNECTED, _T.EOF_WITHOUT_TERMINAL

    def play(frames: Iterable[bytes], *tail: Step) -> tuple[Step, ...]:
        return _play(frames, *tail, head=head)

    rows: list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]] = [
        (
            "headers-then-fin",
            "200 and headers, then FIN before any event",
            play((), Fin()),
            _safe(_C.EARLY_STREAM, D, _P.EARLY_STREAM, "closed_mid_body"),
            {},
        ),
        (
            "reasoning-then-fin",
            "reasoning deltas (not visible output), then FIN",
            play(_before(thought, hello), Fin()),
            _safe(_C.EARLY_STREAM, D, _P.EARLY_STREAM, "closed_mid_body"),
            {},
        ),
        (
            "text-then-fin",
            "visible text, then FIN without the terminating chunk",
            play(through_text, Fin()),
            _shown(_C.MID_GENERATION, D, "closed_mid_body"),
            {},
        ),
        (
            "text-then-rst",
            "visible text, then a TCP reset",
            play(through_text, Rst()),
            _shown(_C.MID_GENERATION, D, "reset"),
            {},
        ),
        (
            "chunk-cut-short",
            "visible text, then an HTTP chunk that announces more bytes than it delivers, then FIN",
            play(through_text, cut_chunk(text[len(through_text)], 9), Fin()),
            _shown(_C.MID_GENERATION, D, "closed_mid_body"),
            {},
        ),
        (
            "text-then-clean-close",
            "visible text, then a clean end of the body without the format's terminal event",
            play(through_text, End()),
            _shown(_C.MID_GENERATION, EOF, "eof_without_terminal"),
            {},
        ),
        (
            "first-token-stall",
            "headers and bookkeeping, then silence: the first-token watchdog fires",
            play(preamble, Stall()),
            _safe(_C.WATCHDOG, _T.FIRST_TOKEN_TIMEOUT, _P.EARLY_STREAM, "first_token_timeout"),
            {"config": {"first_token_timeout": WATCHDOG_S}},
        ),
        (
            "text-then-silent-stall",
            "visible text, then silence with the connection open: the idle watchdog fires (never a success)",
            play(through_text, Stall()),
            _shown(_C.WATCHDOG, _T.IDLE_TIMEOUT, "idle_timeout"),
            {"config": {"idle_timeout": WATCHDOG_S}},
        ),
        (
            "malformed-json",
            "visible text, then an event whose JSON is cut off",
            play(through_text, Send(malformed), Stall()),
            _shown(_C.PROTOCOL_ERROR, _T.PROTOCOL_VIOLATION, "protocol_violation"),
            {},
        ),
        (
            "oversize-line",
            "a 6000-byte event line against a 4096-byte line bound, before any output",
            play(preamble, Send(_through(text_stream(fmt, ["y" * 6000]), b"y" * 6000)[-1]), Stall()),
            _expect(
                _C.PROTOCOL_ERROR,
                _V.USER_CONFIRMED_RETRY,
                _T.PROTOCOL_VIOLATION,
                _P.EARLY_STREAM,
                "protocol_violation",
                _A.ASK_USER,
            ),
            {"config": {"max_line_bytes": 4096}},
        ),
        (
            "text-with-usage-and-reasoning",
            "a normal completion: reasoning, text, usage, the terminal event",
            play(thought, End()),
            COMPLETED,
            {},
        ),
        (
            "tool-call-completes",
            "a normal completion with one tool call (the agent does not start it before the end)",
            play(
                tool_call_stream(fmt, [("read_file", '{"path": "README.md"}')], text=["Let me look."]), End()
            ),
            COMPLETED,
            {},
        ),
        (
            "parallel-tool-calls",
            "two tool calls in one turn, completing normally; the agent starts read_file (read_only) and"
            " write_file (effectful) as each call completes",
            play(
                tool_call_stream(
                    fmt,
                    [("read_file", '{"path": "a.txt"}'), ("write_file", '{"path": "b.txt", "text": "hi"}')],
                ),
                End(),
            ),
            COMPLETED,
            {"agent": Agent(tools={"read_file": "read_only", "write_file": "effectful"})},
        ),
        (
            "user-abort",
            "the user presses stop on the first visible text (run.abort, source user)",
            play(through_text, Stall()),
            _expect(_C.LOCAL_ABORT, _V.NO_RETRY, _T.LOCAL_ABORT, _P.MID_GENERATION, "user", _A.NONE),
            {
                "agent": Agent(
                    abort_on=_T.TEXT_DELTA, abort_source=AbortSource.USER, abort_reason="user pressed stop"
                )
            },
        ),
        (
            "outside-cancellation",
            "the code around the run cancels its scope on the first visible text",
            play(through_text, Stall()),
            _expect(_C.LOCAL_ABORT, _V.NO_RETRY, _T.LOCAL_ABORT, _P.MID_GENERATION, "cancelled", _A.NONE),
            {"agent": Agent(cancel_on=_T.TEXT_DELTA)},
        ),
    ]
    return {
        slug: (slug, said.get(slug, words), script, expect, extra)
        for slug, words, script, expect, extra in rows
    }


def _pick(
    rows: Mapping[str, tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]], *slugs: str
) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """The rows named ``slugs``, in that order (the catalog's order is stable)."""
    return [rows[slug] for slug in slugs]


def _streams(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """(slug, description, script, expectation, extra fields) for the streaming faults of ``fmt``."""
    text = text_stream(fmt, TEXT)
    thought = text_stream(fmt, TEXT, reasoning=REASONING)
    hello = _escaped(TEXT[0])
    preamble = _before(text, hello)  # headers' worth of bookkeeping: nothing the user sees
    through_text = _through(text, hello)
    shared = _shared_faults(fmt, _SSE_HEAD, _MALFORMED[fmt], {})
    watch = {"idle_timeout": WATCHDOG_S}
    D, IDLE, EOF = _T.DISCONNECTED, _T.IDLE_TIMEOUT, _T.EOF_WITHOUT_TERMINAL
    out: list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]] = [
        *_pick(
            shared,
            "headers-then-fin",
            "reasoning-then-fin",
            "text-then-fin",
            "text-then-rst",
            "chunk-cut-short",
        ),
        (
            "bad-chunk-header",
            "visible text, then an HTTP chunk header that is not hexadecimal, then FIN: the transfer is"
            " malformed (a protocol error of the HTTP body), not a connection that closed",
            _play(through_text, SendRaw(b"zz\r\nabc\r\n"), Fin()),
            _shown(_C.MID_GENERATION, D, "protocol"),
            {},
        ),
        (
            "corrupt-gzip-body",
            "a body served with content-encoding gzip whose bytes are no gzip: a decoding error, not a"
            " lost connection",
            (
                Headers(headers=(("content-type", "text/event-stream"), ("content-encoding", "gzip"))),
                Send(b"\x1f\x8b\x08\x00" + b"not gzip at all " * 8),
                End(),
            ),
            _safe(_C.EARLY_STREAM, D, _P.EARLY_STREAM, "decoding"),
            {},
        ),
        *_pick(shared, "text-then-clean-close", "first-token-stall"),
        (
            "last-event-without-blank-line",
            "a whole stream whose last event's line ends but its blank line never comes (a gateway that"
            " closes right after the last field): the event is whole and read, as openai-node reads it",
            _play([*text[:-1], text[-1].rstrip(b"\r\n") + b"\n"], End()),
            COMPLETED,
            {},
        ),
        (
            "last-event-torn",
            "visible text, then the last event cut inside its data line and a clean close: a torn event is"
            " never read, so the terminal event never came",
            _play([*text[:-1], text[-1].rstrip(b"\r\n")[:-3]], End()),
            _shown(_C.MID_GENERATION, EOF, "eof_without_terminal"),
            {},
        ),
        (
            "keepalive-before-output-stall",
            "headers and bookkeeping, then only keepalives: they are not progress, so the first-token"
            " watchdog fires",
            _play(preamble, Keepalive(0.05, 200, keepalive(fmt)), End()),
            _safe(_C.WATCHDOG, _T.FIRST_TOKEN_TIMEOUT, _P.EARLY_STREAM, "first_token_timeout"),
            {"config": {"first_token_timeout": WATCHDOG_S}},
        ),
        shared["text-then-silent-stall"],
        (
            "text-then-keepalive-stall",
            "visible text, then only keepalives ("
            + ("ping events" if fmt == "anthropic" else "SSE comments")
            + "): they are not progress, so the idle watchdog fires",
            _play(through_text, Keepalive(0.05, 200, keepalive(fmt)), End()),
            _shown(_C.WATCHDOG, IDLE, "idle_timeout"),
            {"config": watch},
        ),
        (
            "reasoning-then-keepalive-stall",
            "reasoning, then only keepalives: the idle watchdog fires before anything was shown",
            _play(_before(thought, hello), Keepalive(0.05, 200, keepalive(fmt)), End()),
            _safe(_C.WATCHDOG, IDLE, _P.EARLY_STREAM, "idle_timeout"),
            {"config": watch},
        ),
        *_pick(
            shared,
            "malformed-json",
            "oversize-line",
            "text-with-usage-and-reasoning",
            "tool-call-completes",
            "parallel-tool-calls",
            "user-abort",
            "outside-cancellation",
        ),
        (
            "consumer-stops-early",
            "the code reading the stream leaves the loop on the first visible text",
            _play(text, End()),
            _expect(
                _C.LOCAL_ABORT, _V.NO_RETRY, _T.LOCAL_ABORT, _P.MID_GENERATION, "consumer_stopped", _A.NONE
            ),
            {"agent": Agent(stop_on=_T.TEXT_DELTA)},
        ),
        (
            "consumer-error",
            "the code reading the stream raises on the first visible text",
            _play(text, End()),
            _expect(
                _C.CONSUMER_ERROR,
                _V.NO_RETRY,
                _T.CONSUMER_ERROR,
                _P.MID_GENERATION,
                "consumer_error",
                _A.STOP,
            ),
            {"agent": Agent(raise_on=_T.TEXT_DELTA)},
        ),
    ]
    out += _real_world(fmt, "stream")
    out += _finishes(fmt)
    out += _open_world(fmt)
    out += _real_world(fmt, "finish")
    out += _not_streams(fmt)
    if fmt == "openai-chat":
        calls = tool_call_stream(fmt, [("apply_patch", PATCH_ARGS)])
        broken = frame({"id": "gen-1761", "choices": [{"index": 0, "delta": {}, "finish_reason": "error"}]})
        out += [
            (
                "done-missing-clean-close",
                "text and the finish_reason chunk, then a clean end of body without data: [DONE], as"
                " llama.cpp-style servers and some gateways send it: a whole answer (the missing sentinel is"
                " evidence, wire=done_missing)",
                _play(_before(text, b"data: [DONE]"), End()),
                COMPLETED,
                {},
            ),
            (
                "finish-reason-then-fin",
                "text and the finish_reason chunk, then FIN mid-body (no terminating chunk): still a cut",
                _play(_through(text, b'"finish_reason":"stop"'), Fin()),
                _shown(_C.MID_GENERATION, D, "closed_mid_body"),
                {},
            ),
            (
                "tool-args-then-finish-error",
                "a tool call's arguments streaming, then a chunk with finish_reason 'error' (a gateway's"
                " in-band failure), then FIN: a provider error while the call was being written, never a"
                " complete call",
                _play(_through(calls, _escaped(PATCH_ARGS[12:24])), Send(broken), Fin()),
                _expect(
                    _C.PROVIDER_ERROR,
                    _V.USER_CONFIRMED_RETRY,
                    _T.PROVIDER_ERROR_EVENT,
                    _P.TOOL_INPUT,
                    "unknown",
                    _A.ASK_USER,
                ),
                {},
            ),
        ]
    if fmt == "anthropic":
        stray = frame(
            {"type": "content_block_delta", "index": 5, "delta": {"type": "text_delta", "text": "Hello"}},
            "content_block_delta",
        )
        out.append(
            (
                "delta-for-unknown-block",
                "a text delta for content block 5, which never started: a protocol violation at that event,"
                " never visible text",
                _play(preamble, Send(stray), End()),
                _expect(
                    _C.PROTOCOL_ERROR,
                    _V.USER_CONFIRMED_RETRY,
                    _T.PROTOCOL_VIOLATION,
                    _P.EARLY_STREAM,
                    "protocol_violation",
                    _A.ASK_USER,
                ),
                {},
            )
        )
        out.append(
            (
                "text-then-comment-stall",
                "visible text, then only SSE comments (a proxy's keepalive): the idle watchdog fires",
                _play(through_text, Keepalive(0.05, 200, b": keepalive\n\n"), End()),
                _shown(_C.WATCHDOG, IDLE, "idle_timeout"),
                {"config": watch},
            )
        )
    if fmt == "openai-responses":
        out.append(
            (
                "background-stream",
                "a background request's stream (background and stream true): response.created and"
                " response.queued before the work starts, then the ordinary stream: a whole answer",
                _play(text_stream(fmt, TEXT, background=True), End()),
                COMPLETED,
                {},
            )
        )
    out += _tool_streams(fmt)
    out += _real_world(fmt, "tool")
    out += _in_band_errors(fmt, preamble, through_text)
    return out


# Raw finish reasons that end a run whole in form but not an answer in the user's eyes: (slug, cause) per
# format. The run still finishes; its summary key (completed.<cause>) and words say what happened.
_FINISHES: Final[dict[str, tuple[tuple[str, str, str], ...]]] = {
    "openai-chat": (("length", "length", "length"), ("content_filter", "content-filter", "content_filter")),
    "openai-responses": (
        ("max_output_tokens", "length", "length"),
        ("content_filter", "content-filter", "content_filter"),
    ),
    "anthropic": (("max_tokens", "length", "length"), ("refusal", "refusal", "refusal")),
    "gemini": (
        ("MAX_TOKENS", "length", "length"),
        ("SAFETY", "content-filter", "content_filter"),
        ("RECITATION", "recitation", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "malformed-function-call", "malformed_tool_call"),
    ),
}


def _finishes(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    return [
        (
            f"finish-{slug}",
            f"a stream that ends normally with finish reason {raw!r}: finished, but not a whole answer",
            _play(text_stream(fmt, TEXT[:1], finish=raw), End()),
            _expect(_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, cause, _A.NONE),
            {},
        )
        for raw, slug, cause in _FINISHES[fmt]
    ]


# A finish reason nobody here knows, per format: plausible or documented elsewhere, in no whole-answer set.
_UNRECOGNISED: Final = {
    "openai-chat": "eos_reached",  # a local server's own end-of-sequence word
    "openai-responses": "max_prompt_tokens",  # an incomplete_details.reason the Responses docs do not list
    "anthropic": "max_thinking_tokens",  # a stop_reason no SDK defines
    "gemini": "FINISH_REASON_UNSPECIFIED",  # Gemini: its enum's unset value; it says nothing of the answer
}
# The output limit hit while a call's arguments streamed, per format: the raw reason.
_LENGTH: Final = {"openai-chat": "length", "openai-responses": "max_output_tokens", "anthropic": "max_tokens"}
CUT_ARGS: Final = '{"patch": "' + "x" * 30  # arguments the output limit cut: not JSON


def _cut_call(fmt: Format, finish: str) -> list[bytes]:
    """A call whose arguments stop short, then the provider's end with ``finish``. Chat and Anthropic end
    the call on the cut JSON (``finish_reason``, ``content_block_stop``); Responses sends no ``done`` for
    the cut item, only ``response.incomplete``."""
    frames = build(fmt, [("tool", "apply_patch", CUT_ARGS)], finish=finish)
    if fmt == "openai-responses":
        cut = _index(frames, b'"response.function_call_arguments.done"')
        return [*frames[:cut], frames[-1]]
    return frames


def _open_world(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """Issue 29: an unrecognised finish is never a whole answer; a call the provider's end left unfinished is
    never a call; a finish reason that reads as an abort is the provider's error where it arrived."""
    raw = _UNRECOGNISED[fmt]
    out: list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]] = [
        (
            "finish-unrecognised",
            f"visible text, then the terminal event with finish reason {raw!r}, which no whole-answer set"
            " holds: finished, but never called a whole answer, and the reason is named",
            _play(text_stream(fmt, TEXT[:1], finish=raw), End()),
            _expect(
                _C.COMPLETED,
                _V.USER_CONFIRMED_RETRY,
                None,
                _P.FINISHED,
                "unrecognised",
                _A.CONTINUE_WITH_PARTIAL,
            ),
            {},
        )
    ]
    if fmt == "gemini":  # every Gemini call arrives whole: there are no arguments to cut
        return out
    out.append(
        (
            "tool-args-cut-at-length",
            f"the output limit ({_LENGTH[fmt]!r}) reached while a call's arguments streamed: the provider"
            " ends the response on arguments that are not JSON; no call is handed out, the tool did not run",
            _play(_cut_call(fmt, _LENGTH[fmt]), End()),
            _expect(
                _C.TOOL_INPUT_INTERRUPTED,
                _V.NO_RETRY,
                _T.TOOL_INPUT_UNFINISHED,
                _P.TOOL_INPUT,
                "length",
                _A.FIX_REQUEST,
            ),
            {},
        )
    )
    if fmt == "openai-chat":
        whole = build(fmt, [("tool", "apply_patch", PATCH_ARGS)], finish=raw)
        out += [
            (
                "tool-call-finish-unrecognised",
                f"a call whose arguments parse, ended by finish reason {raw!r}: chat ends a call only by a"
                " whole-answer finish, so the call stays unfinished and is never handed out",
                _play(whole, End()),
                _expect(
                    _C.TOOL_INPUT_INTERRUPTED,
                    _V.USER_CONFIRMED_RETRY,
                    _T.TOOL_INPUT_UNFINISHED,
                    _P.TOOL_INPUT,
                    "unrecognised",
                    _A.ASK_USER,
                ),
                {},
            ),
            (
                "finish-abort",
                "visible text, then finish_reason 'abort' (vLLM and SGLang when the engine aborts a request):"
                " the provider's error at that point, not a finish",
                _play(text_stream(fmt, TEXT[:1], finish="abort"), End()),
                _shown(_C.PROVIDER_ERROR, _T.PROVIDER_ERROR_EVENT, "unknown"),
                {},
            ),
        ]
    if fmt == "anthropic":
        out.append(
            (
                "tool-args-unparseable-at-tool-use",
                "a tool_use block closed on arguments that are not JSON, then stop_reason 'tool_use': the"
                " provider called it whole, but a call that does not parse is never handed out",
                _play(_cut_call(fmt, "tool_use"), End()),
                _expect(
                    _C.TOOL_INPUT_INTERRUPTED,
                    _V.USER_CONFIRMED_RETRY,
                    _T.TOOL_INPUT_UNFINISHED,
                    _P.TOOL_INPUT,
                    "unparseable_arguments",
                    _A.ASK_USER,
                ),
                {},
            )
        )
    return out


def _tool_streams(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    D = _T.DISCONNECTED
    one_call = tool_call_stream(fmt, [("apply_patch", PATCH_ARGS)])
    write = tool_call_stream(fmt, [("write_file", '{"path": "b.txt", "text": "hi"}')])
    out: list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]] = []
    if fmt == "gemini":
        out += _gemini_calls()
        # Gemini sends whole calls: a cut inside the chunk carrying the call leaves no tool state behind.
        chunk = one_call[_index(one_call, b'"functionCall"')]
        out.append(
            (
                "tool-call-chunk-cut",
                "Gemini's honest equivalent of a cut mid-arguments: the chunk carrying the whole call is cut"
                " in half, then FIN; no call was ever seen, so the tool cannot have run",
                (Headers(), Send(chunk[: len(chunk) // 2]), Fin()),
                _safe(_C.EARLY_STREAM, D, _P.EARLY_STREAM, "closed_mid_body"),
                {},
            )
        )
    else:
        second_piece = _escaped(PATCH_ARGS[12:24])
        out.append(
            (
                "tool-args-cut",
                "a tool call's arguments cut mid-way (two deltas in), then FIN: the tool did not run",
                _play(_through(one_call, second_piece), Fin()),
                _safe(_C.TOOL_INPUT_INTERRUPTED, D, _P.TOOL_INPUT, "closed_mid_body"),
                {},
            )
        )
        two = tool_call_stream(fmt, [("write_file", '{"path": "b.txt"}'), ("apply_patch", PATCH_ARGS)])
        out.append(
            (
                "parallel-effectful-then-args-cut",
                "two calls in one turn: the agent starts write_file (effectful) as soon as it is complete,"
                " then the stream is cut while apply_patch's arguments are still streaming",
                _play(_through(two, second_piece), Fin()),
                _expect(
                    _C.TOOL_INPUT_INTERRUPTED,
                    _V.NO_RETRY,  # write_file already ran: replaying could repeat its effect
                    D,
                    _P.TOOL_INPUT,
                    "closed_mid_body",
                    _A.CONTINUE_WITH_PARTIAL,
                ),
                {"agent": Agent(tools={"write_file": "effectful"})},
            )
        )
    out += [
        (
            "tool-call-then-fin",
            "a complete tool call the agent has not started, then FIN",
            _play(_call_complete(fmt, write), Fin()),
            _safe(_C.TOOL_CALL_INTERRUPTED, D, _P.TOOL_CALL, "closed_mid_body"),
            {},
        ),
        (
            "effectful-tool-running-then-fin",
            "a complete tool call; the agent declares write_file effectful and starts it; then FIN",
            _play(_call_complete(fmt, write), Fin()),
            _expect(
                _C.TOOL_SIDE_EFFECT,
                _V.NO_RETRY,
                D,
                _P.TOOL_EXECUTION,
                "closed_mid_body",
                _A.CONTINUE_WITH_PARTIAL,
            ),
            {"agent": Agent(tools={"write_file": "effectful"})},
        ),
        (
            "read-only-tool-running-then-rst",
            "a complete tool call; the agent declares write_file read_only and starts it; then a reset",
            _play(_call_complete(fmt, write), Rst()),
            _safe(_C.TOOL_CALL_INTERRUPTED, _T.DISCONNECTED, _P.TOOL_EXECUTION, "reset"),
            {"agent": Agent(tools={"write_file": "read_only"})},
        ),
    ]
    return out


def _g(
    parts: list[dict[str, Any]] | None,
    finish: str | None = None,
    *,
    message: str | None = None,
    usage: bool = False,
) -> bytes:
    """One Gemini chunk (candidate 0), as ``streamGenerateContent?alt=sse`` frames it; ``message``: the
    candidate's finishMessage."""
    candidate: dict[str, Any] = {"index": 0}
    if parts is not None:
        candidate["content"] = {"role": "model", "parts": parts}
    if finish is not None:
        candidate["finishReason"] = finish
    if message is not None:
        candidate["finishMessage"] = message
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-3-pro-preview"}
    if usage:
        body["usageMetadata"] = {"promptTokenCount": 26, "candidatesTokenCount": 23, "totalTokenCount": 49}
    return frame(body, crlf=True)


_G_SIGNATURE: Final = "CiMBjz1rX25KieIB4d4AwFn8/WbsHTRNHBXso88Ptemwfs"


def _g_fragments(call: dict[str, Any]) -> dict[str, Any]:
    return {"functionCall": {**call, "willContinue": True}}


# Vertex AI's streamed function-call arguments (FunctionCallingConfig.streamFunctionCallArguments, Gemini 3;
# google-genai types.FunctionCall.partial_args / will_continue): the call starts with its name, its values
# arrive at JSON paths (a string in pieces while the piece says willContinue), and an empty functionCall
# ends it. The shape of vercel/ai's recorded fixture google-stream-tool-call-arguments.
_G_STREAMED: Final = (
    _g([{"functionCall": {"name": "write_file", "willContinue": True}, "thoughtSignature": _G_SIGNATURE}]),
    _g([_g_fragments({"partialArgs": [{"jsonPath": "$.path", "stringValue": "notes/b.txt"}]})]),
    _g(
        [
            _g_fragments(
                {"partialArgs": [{"jsonPath": "$.text", "stringValue": "first ", "willContinue": True}]}
            )
        ]
    ),
    _g(
        [_g_fragments({"partialArgs": [{"jsonPath": "$.text", "stringValue": "line", "willContinue": True}]})]
    ),
    _g([_g_fragments({"partialArgs": [{"jsonPath": "$.text", "stringValue": ""}]})]),
    _g([_g_fragments({"partialArgs": [{"jsonPath": "$.mode", "numberValue": 644}]})]),
    _g([{"functionCall": {}}]),
)


def _gemini_calls() -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """Gemini's tool shapes as the API documents them: streamed arguments, parallel calls, code execution,
    and the finishes that say a call must not run."""
    effectful = {"agent": Agent(tools={"write_file": "effectful"})}
    stop = _g([], "STOP", usage=True)
    call = {"functionCall": {"name": "write_file", "args": {"path": "b.txt", "text": "hi"}}}
    no_retry_fix = (_V.NO_RETRY, _T.TOOL_INPUT_UNFINISHED, _P.TOOL_INPUT)
    return [
        (
            "streamed-call-arguments",
            "a call whose arguments stream in fragments at JSON paths (Vertex's streamFunctionCallArguments),"
            " ended by an empty functionCall, then STOP: one call, handed out whole, and the tool runs",
            _play([*_G_STREAMED, stop], End()),
            COMPLETED,
            effectful,
        ),
        (
            "streamed-call-cut-mid-arguments",
            "a streamed call cut after a few fragments (its string still awaiting pieces), then FIN: the call"
            " is still being written, no call was handed out, and the tool did not run",
            _play(_G_STREAMED[:3], Fin()),
            _safe(_C.TOOL_INPUT_INTERRUPTED, _T.DISCONNECTED, _P.TOOL_INPUT, "closed_mid_body"),
            effectful,
        ),
        (
            "streamed-call-cut-at-length",
            "the output limit (MAX_TOKENS) reached while a call's arguments streamed: the provider never"
            " ended the call, so it is never handed out",
            _play([*_G_STREAMED[:4], _g([], "MAX_TOKENS", usage=True)], End()),
            _expect(_C.TOOL_INPUT_INTERRUPTED, *no_retry_fix, "length", _A.FIX_REQUEST),
            effectful,
        ),
        (
            "parallel-calls-with-ids",
            "two calls with their ids in one chunk, a thought signature on the first, then STOP in the same"
            " chunk: both handed out, in order",
            _play(
                [
                    _g(
                        [
                            {**call, "thoughtSignature": _G_SIGNATURE},
                            {"functionCall": {"id": "fc-2", "name": "read_file", "args": {"path": "a.txt"}}},
                        ],
                        "STOP",
                        usage=True,
                    )
                ],
                End(),
            ),
            COMPLETED,
            effectful,
        ),
        (
            "code-execution",
            "the model writes code (executableCode), the provider runs it (codeExecutionResult), then the"
            " answer and STOP: a server-side call, a whole answer",
            _play(
                [
                    _g([{"executableCode": {"language": "PYTHON", "code": "print(2 + 2)"}}]),
                    _g([{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4\n"}}]),
                    _g([{"text": "2 + 2 is 4."}], "STOP", usage=True),
                ],
                End(),
            ),
            COMPLETED,
            {},
        ),
        (
            "malformed-function-call-no-content",
            "finishReason MALFORMED_FUNCTION_CALL with its finishMessage and no content (the call could not"
            " be parsed, so none is sent): not a whole answer, no call",
            _play(
                [
                    _g(
                        None,
                        "MALFORMED_FUNCTION_CALL",
                        message="Malformed function call: print(default_api.write_file(path=))",
                        usage=True,
                    )
                ],
                End(),
            ),
            _expect(_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "malformed_tool_call", _A.NONE),
            effectful,
        ),
        *(
            (
                f"{raw.lower().replace('_', '-')}-with-its-call",
                f"a call in the chunk whose finishReason is {raw}: the provider says it must not run, so it"
                " is never handed out (the agent never starts it) and the answer is not whole",
                _play([_g([call], raw, usage=True)], End()),
                _expect(_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "malformed_tool_call", _A.NONE),
                effectful,
            )
            for raw in ("UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS")
        ),
        (
            "unexpected-tool-call-then-fin",
            "a call with finishReason UNEXPECTED_TOOL_CALL, then the body is cut before its end: the call was"
            " never handed out, so the effectful tool never started",
            _play([_g([call], "UNEXPECTED_TOOL_CALL")], Fin()),
            _safe(_C.TOOL_CALL_INTERRUPTED, _T.DISCONNECTED, _P.TOOL_CALL, "closed_mid_body"),
            effectful,
        ),
    ]


def _in_band_errors(
    fmt: Format, preamble: list[bytes], through_text: list[bytes]
) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    E = _T.PROVIDER_ERROR_EVENT
    backoff = _A.RETRY_AFTER_BACKOFF

    def before(kind: str, shape: str = "nested") -> tuple[Step, ...]:
        event = error_event(fmt, kind, shape=shape, sequence_number=len(preamble))  # type: ignore[arg-type]
        return _play(preamble, Send(event), End())

    def after(kind: str, shape: str = "nested") -> tuple[Step, ...]:
        event = error_event(fmt, kind, shape=shape, sequence_number=len(through_text))  # type: ignore[arg-type]
        return _play(through_text, Send(event), End())

    shape_name = {
        "openai-chat": "an {'error': {...}} chunk",
        "anthropic": "an 'event: error' (overloaded_error)",
        "gemini": "an {'error': {...}} chunk (503 UNAVAILABLE)",
    }
    if fmt != "openai-responses":
        return [
            (
                "error-before-output",
                f"an in-band overload error before any output: {shape_name[fmt]}",
                before("overloaded"),
                _safe(_C.PROVIDER_ERROR, E, _P.EARLY_STREAM, "overloaded", backoff),
                {},
            ),
            (
                "error-after-output",
                f"an in-band overload error after visible text: {shape_name[fmt]}",
                after("overloaded"),
                _shown(_C.PROVIDER_ERROR, E, "overloaded"),
                {},
            ),
            (
                "context-overflow-in-band",
                "an in-band context-overflow error before any output: the request must change",
                before("context_overflow"),
                _expect(
                    _C.PROVIDER_ERROR, _V.NO_RETRY, E, _P.EARLY_STREAM, "context_overflow", _A.FIX_REQUEST
                ),
                {},
            ),
        ]
    out: list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]] = []
    injected = error_event(fmt, "context_overflow", shape="nested", sequence_number=0)
    out.append(
        (
            "renumbered-error-after-output",
            "after visible text, a gateway's nested 'error' event numbered afresh (sequence_number 0,"
            " code context_length_exceeded): the provider error it names, not a sequence fault",
            _play(through_text, Send(injected), End()),
            _expect(
                _C.PROVIDER_ERROR,
                _V.NO_RETRY,
                E,
                _P.MID_GENERATION,
                "context_overflow",
                _A.FIX_REQUEST,
            ),
            {},
        )
    )
    for shape, kind, label in (
        ("flat", "rate_limit", "the flat 'error' event (code rate_limit_exceeded)"),
        ("nested", "overloaded", "the nested 'error' event (code server_is_overloaded)"),
        ("failed", "server_error", "'response.failed' (code server_error)"),
    ):
        slug = "response-failed" if shape == "failed" else f"error-{shape}"
        out += [
            (
                f"{slug}-before-output",
                f"before any output: {label}",
                before(kind, shape),
                _safe(_C.PROVIDER_ERROR, E, _P.EARLY_STREAM, kind, backoff),
                {},
            ),
            (
                f"{slug}-after-output",
                f"after visible text: {label}",
                after(kind, shape),
                _shown(_C.PROVIDER_ERROR, E, kind),
                {},
            ),
        ]
    return out


# Whole answers where a stream was due (a proxy or server that ignored "stream": true), per format.
_COMPLETIONS: Final[dict[str, dict[str, Any]]] = {
    "openai-chat": {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebG",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Hello world"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 25, "completion_tokens": 2, "total_tokens": 27},
    },
    "openai-responses": {
        "id": "resp_68af4030592c81938ec0a5fbab4a3e9f",
        "object": "response",
        "status": "completed",
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "Hello world"}]}],
    },
    "anthropic": {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello world"}],
        "stop_reason": "end_turn",
    },
    "gemini": {
        "candidates": [
            {"content": {"parts": [{"text": "Hello world"}], "role": "model"}, "finishReason": "STOP"}
        ],
        "modelVersion": "gemini-2.5-flash",
    },
}
_HTML_200: Final = (
    b"<!DOCTYPE html>\n<html><head><title>Just a moment...</title></head>\n<body>Checking your browser"
    b" before accessing the API.</body></html>\n"
)


def _not_streams(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """2xx bodies that are no event stream: never read as half an SSE event, never retried as safe."""
    not_sse = _expect(
        _C.PROTOCOL_ERROR,
        _V.USER_CONFIRMED_RETRY,
        _T.PROTOCOL_VIOLATION,
        _P.EARLY_STREAM,
        "protocol_violation",
    )
    out: list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]] = [
        (
            "json-completion-at-200",
            "HTTP 200 application/json with a whole completion instead of a stream: a protocol error,"
            " possibly delivered (it was generated and billed), never retried automatically",
            (Status(200, JSON_HEADERS, json.dumps(_COMPLETIONS[fmt]).encode()),),
            {**not_sse, "expected_action": _A.ASK_USER},
            {},
        ),
        (
            "html-at-200",
            "HTTP 200 text/html from a proxy's challenge page: a protocol error, not a half-read event",
            (Status(200, (("content-type", "text/html; charset=UTF-8"),), _HTML_200),),
            {**not_sse, "expected_action": _A.ASK_USER},
            {},
        ),
    ]
    if fmt in ("openai-chat", "openai-responses"):
        key_error = _openai_error(
            "Incorrect API key provided: sk-proj-********************abcd.",
            "invalid_request_error",
            "invalid_api_key",
        )
        out.append(
            (
                "json-auth-error-at-200",
                "HTTP 200 application/json whose body is an invalid_api_key error (a gateway that answers"
                " errors with 200): the auth error it names, never retried",
                (Status(200, JSON_HEADERS, key_error),),
                _expect(
                    _C.PROVIDER_ERROR,
                    _V.NO_RETRY,
                    _T.PROVIDER_ERROR_EVENT,
                    _P.EARLY_STREAM,
                    "auth",
                    _A.FIX_REQUEST,
                ),
                {},
            )
        )
    return out


def _connection(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    B, D = _P.BEFORE_CONNECTION, _T.DISCONNECTED
    return [
        (
            "connection-refused",
            "nobody listens on the port",
            (),
            _safe(_C.BEFORE_CONNECTION, _T.CONNECT_FAILED, B, "refused"),
            {"no_listener": True},
        ),
        (
            "fin-before-response",
            "the server reads the request, then closes (FIN) without answering",
            (Fin(),),
            _safe(_C.BEFORE_CONNECTION, D, B, "closed_before_response"),
            {},
        ),
        (
            "rst-before-response",
            "the server reads the request, then resets the connection",
            (Rst(),),
            _safe(_C.BEFORE_CONNECTION, D, B, "reset"),
            {},
        ),
        (
            "stall-before-headers",
            "the server reads the request and never answers: the connect watchdog fires",
            (Stall(),),
            _safe(_C.WATCHDOG, _T.CONNECT_TIMEOUT, B, "connect_timeout"),
            {"config": {"connect_timeout": WATCHDOG_S}},
        ),
    ]


# -- content shapes (issue 29, root 4): every documented shape read, the rest evidence, errors by shape ------


def _reshaped(frames: Sequence[bytes], shape: Callable[[str], Any], field: bytes) -> list[bytes]:
    """``frames`` with each TEXT piece's JSON string, where it is the value of ``field``, replaced by
    ``shape(piece)`` (any JSON value)."""
    out = []
    for data in frames:
        for piece in TEXT:
            old = field + b":" + json.dumps(piece).encode()
            data = data.replace(old, field + b":" + json.dumps(shape(piece), separators=(",", ":")).encode())
        out.append(data)
    return out


# Answers in a shape no adapter reads: a finish must not be called a whole answer (completed.unread_content).
_UNREAD: Final = _expect(_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "unread_content", _A.NONE)


def _content_shapes(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    text = text_stream(fmt, TEXT)
    hello = _escaped(TEXT[0])
    preamble = _before(text, hello)
    through_text = _through(text, hello)
    E = _T.PROVIDER_ERROR_EVENT
    out: list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]] = []
    if fmt == "openai-chat":
        parts = _reshaped(text, lambda t: [{"type": "text", "text": t, "annotations": []}], b'"content"')
        unread = _reshaped(text, lambda t: [{"type": "output_markdown", "markdown": t}], b'"content"')
        vllm = {
            "object": "error",
            "message": "The server had an error while processing your request.",
            "type": "InternalServerError",
            "param": None,
            "code": 500,
        }
        named = frame({"id": "gen-1761", "object": "chat.completion.chunk", "choices": []}, "error")
        field_error = b'error: {"code":500,"message":"slot unavailable","type":"server_error"}\n\n'
        out += [
            (
                "content-as-typed-parts",
                "content sent as a list of typed text parts with extra fields (Mistral, Gemini's"
                " OpenAI-compatible API): the text is read, a whole answer",
                _play(parts, End()),
                COMPLETED,
                {},
            ),
            (
                "content-parts-unread",
                "every content delta a list of parts of a type no adapter knows, then finish_reason stop and"
                " [DONE]: finished, but no answer was read (completed.unread_content, confidence low)",
                _play(unread, End()),
                _UNREAD,
                {},
            ),
            (
                "vllm-object-error-after-output",
                "after visible text, vLLM's in-band error: a flat {'object': 'error', 'code': 500} chunk,"
                " then FIN: a provider error, not a finish",
                _play(through_text, Send(frame(vllm)), Fin()),
                _shown(_C.PROVIDER_ERROR, E, "server_error"),
                {},
            ),
            (
                "error-sse-field-after-output",
                "after visible text, a failure on a line 'error: {...}' (no such SSE field; a server's own),"
                " then [DONE]: the provider error it names, never a clean end",
                _play(through_text, Send(field_error), Send(b"data: [DONE]\n\n"), End()),
                _shown(_C.PROVIDER_ERROR, E, "server_error"),
                {},
            ),
            (
                "error-event-name-before-output",
                "before any output, an 'event: error' whose data is a chat chunk (a gateway's failure): a"
                " provider error whose kind is not named",
                _play(preamble, Send(named), End()),
                _expect(
                    _C.PROVIDER_ERROR, _V.USER_CONFIRMED_RETRY, E, _P.EARLY_STREAM, "unknown", _A.ASK_USER
                ),
                {},
            ),
        ]
    elif fmt == "anthropic":
        unread = _reshaped(
            [f.replace(b'"text_delta"', b'"markdown_delta"') for f in text], lambda t: t, b'"text"'
        )
        unread = [f.replace(b'"type":"text","text":""', b'"type":"markdown","markdown":""') for f in unread]
        flat = frame({"type": "overloaded_error", "message": "Overloaded"}, "error")
        out += [
            (
                "content-block-unread",
                "a content block of a type no adapter knows and its deltas, then end_turn: finished, but no"
                " answer was read (completed.unread_content)",
                _play(unread, End()),
                _UNREAD,
                {},
            ),
            (
                "flat-error-type-before-output",
                "before any output, an 'event: error' whose data is the error itself, flat (a gateway's"
                " {'type': 'overloaded_error'}): the overload it names",
                _play(preamble, Send(flat), End()),
                _safe(_C.PROVIDER_ERROR, E, _P.EARLY_STREAM, "overloaded", _A.RETRY_AFTER_BACKOFF),
                {},
            ),
        ]
    elif fmt == "gemini":
        unread = _reshaped(text, lambda t: t, b'"text"')
        unread = [f.replace(b'{"text":', b'{"markdown":') for f in unread]
        overloaded = "The model is overloaded. Please try again later."
        flat = frame({"code": 503, "message": overloaded, "status": "UNAVAILABLE"})
        out += [
            (
                "part-unread",
                "parts of a kind no adapter knows, then finishReason STOP: finished, but no answer was read"
                " (completed.unread_content)",
                _play(unread, End()),
                _UNREAD,
                {},
            ),
            (
                "flat-error-after-output",
                "after visible text, a proxy's flat {'code': 503, 'message', 'status': 'UNAVAILABLE'} chunk"
                " (no 'error' wrapper): the overload it names",
                _play(through_text, Send(flat), End()),
                _shown(_C.PROVIDER_ERROR, E, "overloaded"),
                {},
            ),
        ]
    else:
        unread = [f.replace(b"response.output_text.delta", b"response.output_markdown.delta") for f in text]
        named = frame({"code": "server_error", "message": "The server had an error."}, "error")
        out += [
            (
                "unknown-delta-unread",
                "text sent only as deltas of a type no adapter knows, then response.completed: finished, but"
                " no answer was read (completed.unread_content)",
                _play(unread, End()),
                _UNREAD,
                {},
            ),
            (
                "typeless-error-event-after-output",
                "after visible text, an 'event: error' with a typeless flat {'code': 'server_error',"
                " 'message'}: the provider error it names, not a protocol fault",
                _play(through_text, Send(named), End()),
                _shown(_C.PROVIDER_ERROR, E, "server_error"),
                {},
            ),
        ]
    return out


# Money, quota and plan limits, and waits past an automatic retry, as providers word them (issue 29, root 3):
# the words decide under any status and in any position (HTTP error, in-band event, JSON at 200).
_GROQ_TPD: Final = _openai_error(
    "Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01kjh` service tier"
    " `on_demand` on tokens per day (TPD): Limit 100000, Used 97050, Requested 3619. Please try again in"
    " 9m38.016s. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing",
    "tokens",
    "rate_limit_exceeded",
)


def _limits(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    quota = _http("quota_exhausted", _V.NO_RETRY, _A.STOP)
    early = _expect(
        _C.PROVIDER_ERROR, _V.NO_RETRY, _T.PROVIDER_ERROR_EVENT, _P.EARLY_STREAM, "quota_exhausted"
    )
    in_band = {**early, "expected_action": _A.STOP}

    def event(payload: dict[str, Any], name: str | None = None) -> tuple[Step, ...]:
        return (Headers(), Send(frame(payload, name)), End())

    if fmt in ("openai-chat", "openai-responses"):
        h = _OPENAI_HEADERS
        out: list[tuple[str, str, tuple[Step, ...], dict[str, Any]]] = [
            (
                "http-429-credit-balance-exhausted",
                "OpenAI's 429 insufficient_quota with code credit_balance_exhausted: no wait refills credit",
                (
                    Status(
                        429,
                        h,
                        _openai_error(
                            "You exceeded your current quota, please check your plan and billing details.",
                            "insufficient_quota",
                            "credit_balance_exhausted",
                        ),
                    ),
                ),
                quota,
            ),
            (
                "http-402-insufficient-balance",
                "DeepSeek's 402 'Insufficient Balance' (type unknown_error, code invalid_request_error)",
                (
                    Status(
                        402,
                        h,
                        _openai_error("Insufficient Balance", "unknown_error", "invalid_request_error"),
                    ),
                ),
                quota,
            ),
            (
                "http-403-credits-or-spending-limit",
                "xAI's 403 'has either used all available credits or reached its monthly spending limit':"
                " told only in words, so low confidence, never retried",
                (
                    Status(
                        403,
                        JSON_HEADERS,
                        json.dumps(
                            {
                                "code": "The caller does not have permission to execute the specified"
                                " operation",
                                "error": "Your team 16f2 has either used all available credits or reached"
                                " its monthly spending limit. To continue making API requests, please"
                                " purchase more credits or raise your spending limit.",
                            }
                        ).encode(),
                    ),
                ),
                quota,
            ),
            (
                "http-400-budget-exceeded",
                "LiteLLM proxy's budget_exceeded (400, code '400'): the proxy's money cap",
                (
                    Status(
                        400,
                        JSON_HEADERS,
                        _openai_error(
                            "Budget has been exceeded! Current cost: 10.2, Max budget: 10.0",
                            "budget_exceeded",
                            "400",
                        ),
                    ),
                ),
                quota,
            ),
            (
                "http-429-retry-after-hours",
                "429 rate_limit_exceeded with retry-after of five hours: longer than an automatic retry"
                " waits, so it is asked, never automatic",
                (Status(429, (*h, ("retry-after", "18000")), _TPM_TOO_LARGE.replace(b"30601", b"1")),),
                _http("rate_limit", _V.USER_CONFIRMED_RETRY, _A.ASK_USER, 18000.0),
            ),
            (
                "http-429-try-again-in-minutes",
                "Groq's per-day token limit, 'Please try again in 9m38.016s' in words and no retry-after:"
                " the stated wait is kept, and it is too long for an automatic retry",
                (Status(429, h, _GROQ_TPD),),
                _http("rate_limit", _V.USER_CONFIRMED_RETRY, _A.ASK_USER, 578.016),
            ),
            (
                "json-quota-error-at-200",
                "HTTP 200 application/json whose body is an insufficient_quota error: quota, never retried",
                (
                    Status(
                        200,
                        JSON_HEADERS,
                        _openai_error(
                            "You exceeded your current quota, please check your plan and billing details.",
                            "insufficient_quota",
                            "insufficient_quota",
                        ),
                    ),
                ),
                in_band,
            ),
        ]
        if fmt == "openai-chat":
            out.append(
                (
                    "in-band-credits-error",
                    "OpenRouter's in-band {'error': {'code': 402, 'message': 'Insufficient credits...'}}"
                    " before any output: quota, never retried",
                    event({"error": {"code": 402, "message": "Insufficient credits. Add more credits."}}),
                    in_band,
                )
            )
            return [(slug, text, script, expect, {}) for slug, text, script, expect in out]
        nested = {
            "type": "error",
            "error": {
                "code": "too_many_requests",
                "message": "Too many requests. Please retry shortly.",
                "param": None,
            },
            "sequence_number": 0,
        }
        failed = {
            "type": "response.failed",
            "sequence_number": 0,
            "response": {
                "id": "resp_68af4030592c81938ec0a5fbab4a3e9f",
                "object": "response",
                "status": "failed",
                "error": {"code": "insufficient_quota", "message": "You exceeded your current quota."},
            },
        }
        out += [
            (
                "in-band-too-many-requests-nested",
                "a nested 'error' event with code too_many_requests before any output: a rate limit,"
                " safe to retry after a backoff (never 'unknown')",
                event(nested, "error"),
                _safe(
                    _C.PROVIDER_ERROR,
                    _T.PROVIDER_ERROR_EVENT,
                    _P.EARLY_STREAM,
                    "rate_limit",
                    _A.RETRY_AFTER_BACKOFF,
                ),
            ),
            (
                "in-band-failed-insufficient-quota",
                "'response.failed' whose error code is insufficient_quota: quota, never retried",
                event(failed, "response.failed"),
                in_band,
            ),
        ]
        return [(slug, text, script, expect, {}) for slug, text, script, expect in out]
    if fmt == "anthropic":
        usage = _anthropic_error(
            "invalid_request_error",
            "You have reached your specified API usage limits. You will regain access on 2026-12-01 at"
            " 00:00 UTC.",
        )
        billing = {
            "type": "error",
            "error": {"type": "billing_error", "message": "Credit balance is too low"},
        }
        rows = [
            (
                "http-400-usage-limits",
                "Anthropic's 400 invalid_request_error 'You have reached your specified API usage limits':"
                " a spend limit in words, never retried",
                (Status(400, _ANTHROPIC_HEADERS, usage),),
                quota,
            ),
            (
                "in-band-billing-error",
                "an 'event: error' billing_error before any output",
                event(billing, "error"),
                in_band,
            ),
        ]
        return [(slug, text, script, expect, {}) for slug, text, script, expect in rows]
    exhausted = _gemini_error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).")
    quota_words = {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "status": "RESOURCE_EXHAUSTED",
        }
    }
    rows = [
        (
            "http-429-resource-exhausted",
            "429 RESOURCE_EXHAUSTED with no details and no money words: a rate limit",
            (Status(429, _GEMINI_HEADERS, exhausted),),
            _http("rate_limit", _V.SAFE_AUTO_RETRY, _A.RETRY_AFTER_BACKOFF),
        ),
        (
            "in-band-quota-words",
            "an in-band RESOURCE_EXHAUSTED 'You exceeded your current quota' with no per-minute details:"
            " the words decide (low confidence), never retried",
            (Headers(), Send(frame(quota_words, crlf=True)), End()),
            in_band,
        ),
    ]
    return [(slug, text, script, expect, {}) for slug, text, script, expect in rows]


# An error's words say more than its status: windows, the model's resources, cancellation and wrappers, as
# providers, gateways and local servers word them (DESIGN §13.2: evidence is weighed, not first-matched).
def _evidence(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    if fmt != "openai-chat":
        return []
    quota, safe = _http("quota_exhausted", _V.NO_RETRY, _A.STOP), _V.SAFE_AUTO_RETRY
    unavailable = _http("model_unavailable", _V.NO_RETRY, _A.FIX_REQUEST)

    def body(payload: object) -> bytes:
        return json.dumps(payload).encode()

    no_route = {"error": {"message": "No available channel for model gpt-4o under group default", "type": ""}}
    rows: list[tuple[str, str, tuple[Step, ...], dict[str, Any]]] = [
        (
            "http-500-tokens-per-day",
            "a gateway's 500 whose words say a per-day token limit was reached, with no stated wait: spent"
            " until a reset no retry sits out, whatever the 500 says",
            (
                Status(
                    500,
                    JSON_HEADERS,
                    _openai_error(
                        "Rate limit reached for model `llama-3.3-70b` on tokens per day (TPD): Limit 500000,"
                        " Used 499000, Requested 2000.",
                        "server_error",
                        None,
                    ),
                ),
            ),
            quota,
        ),
        (
            "http-429-quota-code-per-minute",
            "a 429 whose code says quota but whose words count it per minute: a rate limit, retried after a"
            " backoff (never quota_exhausted)",
            (
                Status(
                    429,
                    JSON_HEADERS,
                    _openai_error("Quota exceeded: 60 requests per minute.", "requests", "quota_exceeded"),
                ),
            ),
            _http("rate_limit", safe, _A.RETRY_AFTER_BACKOFF),
        ),
        (
            "http-503-no-channel-for-model",
            "a one-api / new-api gateway's 503 'No available channel for model ...': no wait brings a route",
            (Status(503, JSON_HEADERS, body(no_route)),),
            unavailable,
        ),
        (
            "http-500-needs-more-memory",
            "Ollama's OpenAI endpoint, 500 {'error': 'model requires more system memory ... than is"
            " available ...'} (a string error): the server cannot load the model, so waiting will not help",
            (
                Status(
                    500,
                    JSON_HEADERS,
                    body(
                        {"error": "model requires more system memory (12.3 GiB) than is available (7.8 GiB)"}
                    ),
                ),
            ),
            unavailable,
        ),
        (
            "http-499-cancelled",
            "499 'context canceled' from a Go gateway: the operation was cancelled, not refused; safe to"
            " send again after a backoff (never the client's fault)",
            (Status(499, JSON_HEADERS, body({"error": {"message": "context canceled", "code": 499}})),),
            _http("server_error", safe, _A.RETRY_AFTER_BACKOFF),
        ),
        (
            "http-400-detail-cancelled",
            "a FastAPI server's 400 {'detail': 'The request was cancelled.'}: words that say which outweigh a"
            " status that names no kind",
            (Status(400, JSON_HEADERS, body({"detail": "The request was cancelled."})),),
            _http("server_error", safe, _A.RETRY_AFTER_BACKOFF),
        ),
        (
            "http-400-nested-error-balance",
            "a gateway re-wrapping its upstream's error, {'error': {'error': {...}}}, at 400: the inner"
            " error is read ('Insufficient Balance'), money",
            (
                Status(
                    400,
                    JSON_HEADERS,
                    body(
                        {"error": {"error": {"message": "Insufficient Balance", "code": "invalid_request"}}}
                    ),
                ),
            ),
            quota,
        ),
        (
            "in-band-no-route-for-model",
            "an 'event: error' before any output whose words say no route serves the model: never retried",
            (Headers(), Send(frame(no_route, "error")), End()),
            {
                **_expect(
                    _C.PROVIDER_ERROR,
                    _V.NO_RETRY,
                    _T.PROVIDER_ERROR_EVENT,
                    _P.EARLY_STREAM,
                    "model_unavailable",
                ),
                "expected_action": _A.FIX_REQUEST,
            },
        ),
    ]
    return [(slug, text, script, expect, {}) for slug, text, script, expect in rows]


_SDK_SPOKEN: Final = (
    "openai-chat",
    "openai-responses",
    "anthropic",
)  # the non-streaming calls a tap path plays


def _whole_faults(
    headers: HeaderPairs, body: bytes, said: Mapping[str, str]
) -> dict[str, tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """The non-streaming answers the SDK formats and Ollama share, by slug: ``body`` whole, cut, stalled or
    truncated, served with ``headers``; ``said`` replaces a description (the defaults speak of SDK calls)."""
    whole = {"streaming": False}
    rows: list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]] = [
        (
            "whole/clean-end",
            "a non-streaming call's whole JSON answer (text and a tool call): completed",
            (Status(200, headers, body),),
            COMPLETED,
            whole,
        ),
        (
            "whole/cut-mid-body",
            "a non-streaming answer cut mid-JSON (FIN): nothing was handed out, safe to retry",
            (Headers(headers=headers), Send(body[:40]), Fin()),
            _safe(_C.EARLY_STREAM, _T.DISCONNECTED, _P.EARLY_STREAM, "closed_mid_body"),
            whole,
        ),
        (
            "whole/stall",
            "a non-streaming answer that stops arriving: the first-token watchdog fires (its first event is"
            " the whole body)",
            (Headers(headers=headers), Send(body[:40]), Stall()),
            _safe(_C.WATCHDOG, _T.FIRST_TOKEN_TIMEOUT, _P.EARLY_STREAM, "first_token_timeout"),
            {**whole, "config": {"first_token_timeout": WATCHDOG_S}},
        ),
        (
            "whole/truncated-body",
            "a non-streaming answer whose JSON stops at a clean end of the body: no answer, never completed",
            (Headers(headers=headers), Send(body[:-3]), End()),
            _safe(_C.EARLY_STREAM, _T.EOF_WITHOUT_TERMINAL, _P.EARLY_STREAM, "eof_without_terminal"),
            whole,
        ),
    ]
    return {
        slug: (slug, said.get(slug, words), script, expect, extra)
        for slug, words, script, expect, extra in rows
    }


def _whole_calls(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """Non-streaming calls (``streaming=False``): one JSON answer, whole, cut, stalled, truncated or an error.
    Nothing reaches anyone before the body is whole, so every failure is safe to retry."""
    if fmt not in _SDK_SPOKEN:
        return []
    body = whole_answer(fmt, "Hello", tools=[("read_file", '{"path": "a.txt"}')])
    overloaded = (
        _anthropic_error("overloaded_error", "Overloaded")
        if fmt == "anthropic"
        else _openai_error("The server is overloaded.", "server_error", None)
    )
    shared = _whole_faults(JSON_HEADERS, body, {})
    return [
        *_pick(shared, "whole/clean-end", "whole/cut-mid-body", "whole/stall"),
        (
            "whole/provider-error",
            "a non-streaming call answered 529 with the provider's overloaded error",
            (Status(529, JSON_HEADERS, overloaded),),
            _http("overloaded", _V.SAFE_AUTO_RETRY, _A.RETRY_AFTER_BACKOFF),
            {"streaming": False},
        ),
        shared["whole/truncated-body"],
        *_background_call(fmt),
    ]


def _background_call(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """Responses background mode: a request with ``background: true`` is answered at once with the
    response ``queued``; its answer is fetched later by id. Accepted, not failed; a retry would start a
    second job."""
    if fmt != "openai-responses":
        return []
    queued = whole_answer(fmt, "", finish="queued", usage=False)
    return [
        (
            "whole/background-queued",
            "a background request answered at once with the response queued: accepted to answer in the"
            " background, never a failure, never retried",
            (Status(200, JSON_HEADERS, queued),),
            _expect(_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "background", _A.NONE),
            {"streaming": False},
        )
    ]


# -- Ollama's own API (NDJSON) -------------------------------------------------------------------------------

NDJSON_HEADERS: Final = (("content-type", "application/x-ndjson"),)
_OLLAMA_ERROR_HEADERS: Final = (("content-type", "application/json; charset=utf-8"),)


def _ollama_error(message: str) -> bytes:
    return json.dumps({"error": message}).encode()


# What the shared faults (`_shared_faults`) are called on NDJSON lines where the SSE words do not fit.
_NDJSON_SAID: Final = {
    "text-with-usage-and-reasoning": "/api/chat: thinking, text, then the done line with done_reason 'stop'"
    " and the counts",
    "tool-call-completes": "a tool call whose arguments arrive whole as an object in one line, then"
    " done_reason 'stop'",
    "headers-then-fin": "200 and headers, then FIN before any line",
    "reasoning-then-fin": "thinking lines (not visible output), then FIN",
    "malformed-json": "visible text, then a line whose JSON is cut off and ended (a proxy that splits lines)",
    "oversize-line": "a 6000-byte line against a 4096-byte line bound, before any output",
    "text-then-fin": "visible text, then FIN between lines, before the done line",
    "text-then-clean-close": "visible text, then a clean end of the body without the done line",
    "first-token-stall": "headers, then silence: the first-token watchdog fires",
    "text-then-silent-stall": "visible text, then silence with the connection open: the idle watchdog fires",
}

# What the shared non-streaming answers (`_whole_faults`) are called for Ollama's ``stream: false``.
_NDJSON_WHOLE_SAID: Final = {
    "whole/clean-end": "stream: false: one JSON answer (text and a tool call), done_reason 'stop': completed",
    "whole/cut-mid-body": "stream: false, the answer cut mid-JSON (FIN): nothing was handed out, safe to"
    " retry",
    "whole/truncated-body": "stream: false, the answer's JSON stops at a clean end of the body: never"
    " completed",
    "whole/stall": "stream: false, the answer stops arriving: the first-token watchdog fires",
}


def _ollama() -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """Ollama's ``/api/chat`` and ``/api/generate``: one JSON object per line, ``done: true`` last. The faults
    the SSE formats have, on NDJSON lines: a cut between lines or inside one, a torn last line, a stall, an
    ``{"error": ...}`` line, an error status, a finish reason not known as whole, a whole answer."""
    fmt: Format = "ollama"
    text = text_stream(fmt, TEXT)
    write = tool_call_stream(fmt, [("write_file", '{"path": "b.txt", "text": "hi"}')])
    call_line = write[_index(write, b'"tool_calls"')]
    hello = _escaped(TEXT[0])
    through_text = _through(text, hello)
    rest = text[len(through_text)]
    D, EOF, E = _T.DISCONNECTED, _T.EOF_WITHOUT_TERMINAL, _T.PROVIDER_ERROR_EVENT

    head = Headers(headers=NDJSON_HEADERS)
    shared = _shared_faults(fmt, head, rest[:30] + b"\n", _NDJSON_SAID)

    def play(lines: Iterable[bytes], *tail: Step) -> tuple[Step, ...]:
        return _play(lines, *tail, head=head)

    answer = whole_answer(fmt, "Hello", tools=[("read_file", '{"path": "a.txt"}')])
    not_ndjson = _expect(
        _C.PROTOCOL_ERROR,
        _V.USER_CONFIRMED_RETRY,
        _T.PROTOCOL_VIOLATION,
        _P.EARLY_STREAM,
        "protocol_violation",
    )
    return [
        shared["text-with-usage-and-reasoning"],
        (
            "generate-clean-end",
            "/api/generate: response lines, then the done line with done_reason 'stop'",
            play(text_stream(fmt, TEXT, generate=True), End()),
            COMPLETED,
            {},
        ),
        *_pick(
            shared,
            "tool-call-completes",
            "headers-then-fin",
            "reasoning-then-fin",
            "text-then-rst",
            "chunk-cut-short",
        ),
        (
            "tool-call-line-cut",
            "the line carrying a whole tool call cut in half, then FIN: no call was seen, the tool cannot"
            " have run",
            play((), Send(call_line[: len(call_line) // 2]), Fin()),
            _safe(_C.EARLY_STREAM, D, _P.EARLY_STREAM, "closed_mid_body"),
            {},
        ),
        (
            "tool-call-then-fin",
            "a complete tool call the agent has not started, then FIN before the done line",
            play(write[:-1], Fin()),
            _safe(_C.TOOL_CALL_INTERRUPTED, D, _P.TOOL_CALL, "closed_mid_body"),
            {},
        ),
        (
            "effectful-tool-running-then-fin",
            "a complete tool call; the agent declares write_file effectful and starts it; then FIN",
            play(write[:-1], Fin()),
            _expect(
                _C.TOOL_SIDE_EFFECT,
                _V.NO_RETRY,
                D,
                _P.TOOL_EXECUTION,
                "closed_mid_body",
                _A.CONTINUE_WITH_PARTIAL,
            ),
            {"agent": Agent(tools={"write_file": "effectful"})},
        ),
        *_pick(
            shared,
            "parallel-tool-calls",
            "malformed-json",
            "oversize-line",
            "user-abort",
            "outside-cancellation",
        ),
        (
            "http-500",
            "500 with Ollama's error body",
            (
                Status(
                    500,
                    _OLLAMA_ERROR_HEADERS,
                    _ollama_error("llama runner process has terminated: exit status 2"),
                ),
            ),
            _http("server_error", _V.SAFE_AUTO_RETRY, _A.RETRY_AFTER_BACKOFF),
            {},
        ),
        (
            "http-400-context-overflow",
            "400 with Ollama's error body: the prompt is longer than the context",
            (
                Status(
                    400, _OLLAMA_ERROR_HEADERS, _ollama_error("the input length exceeds the context length")
                ),
            ),
            _http("context_overflow", _V.NO_RETRY, _A.FIX_REQUEST),
            {},
        ),
        (
            "http-413",
            "413 from the front proxy, as HTML",
            (Status(413, (("content-type", "text/html"),), _HTML_413),),
            _http("request_too_large", _V.NO_RETRY, _A.FIX_REQUEST),
            {},
        ),
        shared["text-then-fin"],
        (
            "cut-mid-line",
            "visible text, then half a line, then FIN",
            play(through_text, Send(rest[:30]), Fin()),
            _shown(_C.MID_GENERATION, D, "closed_mid_body"),
            {},
        ),
        (
            "torn-last-line",
            "visible text, then the done line without its end (a clean end of the body inside it): a torn"
            " line is no finish",
            play(text[:-1], Send(text[-1][:-20]), End()),
            _shown(_C.MID_GENERATION, EOF, "eof_without_terminal"),
            {},
        ),
        *_pick(shared, "text-then-clean-close", "first-token-stall", "text-then-silent-stall"),
        (
            "error-line-before-output",
            "an {'error': ...} line before any output (Ollama's queue is full: 'server busy')",
            play((), Send(error_event(fmt, "overloaded")), End()),
            _safe(_C.PROVIDER_ERROR, E, _P.EARLY_STREAM, "overloaded", _A.RETRY_AFTER_BACKOFF),
            {},
        ),
        (
            "error-line-after-output",
            "an {'error': ...} line after visible text (the model runner failed mid-answer; its words name"
            " no kind)",
            play(through_text, Send(error_event(fmt, "server_error")), End()),
            _shown(_C.PROVIDER_ERROR, E, "unknown"),
            {},
        ),
        (
            "http-404-model-not-found",
            "404 with Ollama's error body: the model is not pulled",
            (
                Status(
                    404,
                    _OLLAMA_ERROR_HEADERS,
                    _ollama_error('model "llama3.2" not found, try pulling it first'),
                ),
            ),
            _http("not_found", _V.NO_RETRY, _A.FIX_REQUEST),
            {},
        ),
        (
            "http-503-server-busy",
            "503 with Ollama's 'server busy' body (its request queue is full): no code, the status decides",
            (
                Status(
                    503,
                    _OLLAMA_ERROR_HEADERS,
                    _ollama_error("server busy, please try again.  maximum pending requests exceeded"),
                ),
            ),
            _http("server_error", _V.SAFE_AUTO_RETRY, _A.RETRY_AFTER_BACKOFF),
            {},
        ),
        (
            "finish-length",
            "visible text, then done_reason 'length' (num_predict reached): finished, not a whole answer",
            play(text_stream(fmt, TEXT[:1], finish="length"), End()),
            _expect(_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "length", _A.NONE),
            {},
        ),
        (
            "finish-unrecognised",
            "visible text, then done_reason 'unload' (the model was unloaded): no whole-answer set holds it,"
            " so finished, never called a whole answer, and the reason is named",
            play(text_stream(fmt, TEXT[:1], finish="unload"), End()),
            _expect(
                _C.COMPLETED,
                _V.USER_CONFIRMED_RETRY,
                None,
                _P.FINISHED,
                "unrecognised",
                _A.CONTINUE_WITH_PARTIAL,
            ),
            {},
        ),
        (
            "generate-image-unread",
            "/api/generate answering with an image (a line with a field not read): finished, but nothing of"
            " the answer was read, so never a whole answer",
            play(
                (
                    b'{"model":"x/z-image","created_at":"2025-10-01T12:00:00Z","response":"",'
                    b'"image":"iVBORw0KGgo=","done":false}\n',
                    text_stream(fmt, [], generate=True)[-1],
                ),
                End(),
            ),
            _UNREAD,
            {},
        ),
        (
            "html-at-200",
            "HTTP 200 text/html from a proxy's page where NDJSON was due: a protocol error",
            (Status(200, (("content-type", "text/html; charset=UTF-8"),), _HTML_200),),
            {**not_ndjson, "expected_action": _A.ASK_USER},
            {},
        ),
        (
            "json-error-at-200",
            "HTTP 200 whose body is one JSON document, Ollama's error object, where NDJSON was due: the error"
            " it names, as an SSE format reads such a body",
            (Status(200, _OLLAMA_ERROR_HEADERS, _ollama_error("server busy, please try again.")),),
            _safe(_C.PROVIDER_ERROR, E, _P.EARLY_STREAM, "overloaded", _A.RETRY_AFTER_BACKOFF),
            {},
        ),
        (
            "garbage-at-200",
            "HTTP 200 application/x-ndjson whose lines are no JSON at all: not an NDJSON stream",
            (Status(200, NDJSON_HEADERS, b"OK\nserver ready\n"),),
            {**not_ndjson, "expected_action": _A.ASK_USER},
            {},
        ),
        (
            "pretty-json-at-200",
            "HTTP 200 with a pretty-printed JSON document where NDJSON was due: its first line is no JSON",
            (Status(200, _OLLAMA_ERROR_HEADERS, json.dumps(json.loads(answer), indent=2).encode()),),
            {**not_ndjson, "expected_action": _A.ASK_USER},
            {},
        ),
        *_pick(
            _whole_faults(_OLLAMA_ERROR_HEADERS, answer, _NDJSON_WHOLE_SAID),
            "whole/clean-end",
            "whole/cut-mid-body",
            "whole/truncated-body",
            "whole/stall",
        ),
    ]


_BEDROCK_HEADERS: Final = (("content-type", EVENT_STREAM), ("x-amzn-requestid", "2c9f3b1e-6a0d-4e57-9b1c"))
_BEDROCK_THROTTLED: Final = (
    *JSON_HEADERS,
    ("x-amzn-errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
)


_CONVERSE_ANSWER: Final = json.dumps(
    {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"text": "Hello"},
                    {"toolUse": {"toolUseId": "tooluse_00kq3x", "name": "read_file", "input": {"path": "a"}}},
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": 20, "outputTokens": 40, "totalTokens": 60},
        "metrics": {"latencyMs": 412},
    }
).encode()


# What the shared non-streaming answers (`_whole_faults`) are called on Bedrock where SDK words do not fit.
_BEDROCK_WHOLE_SAID: Final = {
    "whole/clean-end": "a non-streaming call: its JSON answer whole (text and a tool call): completed",
}


def _bedrock(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """Bedrock's AWS event-stream messages (prelude and message CRCs): Claude's own stream
    (``anthropic-bedrock``, each Anthropic event base64 in a chunk) or ConverseStream (``bedrock-converse``,
    each event its own message); exceptions as messages of their own, a damaged CRC, and the non-streaming
    call (``invoke``, ``converse``)."""
    text = text_stream(fmt, TEXT)
    if fmt == "anthropic-bedrock":
        shown = len(_through(text_stream("anthropic", TEXT), _escaped(TEXT[0])))  # through the first text
        whole = whole_answer("anthropic", "Hello", tools=[("read_file", '{"path": "a.txt"}')])
    else:
        shown = 2  # messageStart, then the first text delta
        whole = _CONVERSE_ANSWER
    preamble, through_text, after = text[: shown - 1], text[:shown], text[shown]
    head = Headers(headers=_BEDROCK_HEADERS)
    D, EOF, E = _T.DISCONNECTED, _T.EOF_WITHOUT_TERMINAL, _T.PROVIDER_ERROR_EVENT
    throttled = aws_exception("throttlingException", "Too many tokens, please wait before trying again.")
    stream_error = aws_exception("modelStreamErrorException", "The model stream failed.")
    return [
        (
            "clean-end",
            "the whole stream, each event in its event-stream message: completed",
            _play(text, End(), head=head),
            COMPLETED,
            {},
        ),
        (
            "cut-mid-message",
            "visible text, then half of the next event-stream message, then FIN",
            _play(through_text, Send(after[: len(after) // 2]), Fin(), head=head),
            _shown(_C.MID_GENERATION, D, "closed_mid_body"),
            {},
        ),
        (
            "cut-between-messages",
            "visible text, then FIN between two whole messages",
            _play(through_text, Fin(), head=head),
            _shown(_C.MID_GENERATION, D, "closed_mid_body"),
            {},
        ),
        (
            "torn-last-message",
            "visible text, then half a message and a clean end of the body: truncated, never a finish",
            _play(through_text, Send(after[: len(after) // 2]), End(), head=head),
            _shown(_C.MID_GENERATION, EOF, "eof_without_terminal"),
            {},
        ),
        (
            "stall",
            "visible text, then silence with the connection open: the idle watchdog fires",
            _play(through_text, Stall(), head=head),
            _shown(_C.WATCHDOG, _T.IDLE_TIMEOUT, "idle_timeout"),
            {"config": {"idle_timeout": WATCHDOG_S}},
        ),
        (
            "exception-before-output",
            "a throttlingException message before any output: a rate limit, safe to retry after a wait",
            _play(preamble, Send(throttled), End(), head=head),
            _safe(_C.PROVIDER_ERROR, E, _P.EARLY_STREAM, "rate_limit", _A.RETRY_AFTER_BACKOFF),
            {},
        ),
        (
            "exception-after-output",
            "a modelStreamErrorException message after visible text: the provider's error mid-answer",
            _play(through_text, Send(stream_error), End(), head=head),
            _shown(_C.PROVIDER_ERROR, E, "server_error"),
            {},
        ),
        (
            "damaged-crc",
            "visible text, then a message whose CRC does not match: the stream broke its framing",
            _play(through_text, Send(damaged(after)), End(), head=head),
            _shown(_C.PROTOCOL_ERROR, _T.PROTOCOL_VIOLATION, "protocol_violation"),
            {},
        ),
        (
            "http-429-throttled",
            "429 ThrottlingException (x-amzn-errortype, a JSON message): a rate limit before anything began",
            (Status(429, _BEDROCK_THROTTLED, b'{"message":"Too many requests, please wait."}'),),
            _http("rate_limit", _V.SAFE_AUTO_RETRY, _A.RETRY_AFTER_BACKOFF),
            {},
        ),
        *_pick(
            _whole_faults(JSON_HEADERS, whole, _BEDROCK_WHOLE_SAID), "whole/clean-end", "whole/truncated-body"
        ),
        *([] if fmt != "bedrock-converse" else _converse_malformed(head)),
    ]


def _converse_malformed(
    head: Headers,
) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """botocore's StopReason ``malformed_tool_use``: the provider says the message's call is malformed, even
    though its input parses; no call is handed out."""
    frames = converse([("text", "Reading it."), ("tool", "read_file", '{"path": "a.txt"}')], (9, 0, 4), None)
    stop = converse_event("messageStop", {"stopReason": "malformed_tool_use"})
    frames = [*frames[:-2], stop, frames[-1]]
    return [
        (
            "malformed-tool-use",
            "a call whose input parses, then stopReason 'malformed_tool_use': the provider says the call is"
            " malformed, so it is never handed out",
            _play(frames, End(), head=head),
            _expect(_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "malformed_tool_call", _A.NONE),
            {},
        )
    ]


def _real_world(
    fmt: Format, family: str
) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """The real-world shapes (``_realworld``) of ``fmt`` that join ``family``, as catalog rows."""
    return [
        (slug, text, script, _expect(*outcome), {})
        for slug, text, script, outcome in real_world_rows(fmt, family)
    ]


# -- the same events over a WebSocket (OpenAI Responses' WebSocket mode; runtime/drivers/websocket.py) -------

WEBSOCKET: Final = {"transport": "websocket"}
"""The ``meta`` of a scenario played over a WebSocket: the harness opens the run with a ``ws://`` base URL
(``meta["responses"]``: that many runs one after another on one connection, the last one checked)."""


def _messages(frames: Iterable[bytes]) -> list[bytes]:
    """SSE frames as WebSocket mode sends them: each event's JSON data alone, one message per event."""
    out = []
    for sse in frames:
        data = [line[6:] for line in sse.splitlines() if line.startswith(b"data: ")]
        if data and data != [b"[DONE]"]:
            out.append(b"\n".join(data))
    return out


def _ws_error(status: int, error_type: str, code: str, message: str) -> bytes:
    """WebSocket mode's error message: the HTTP status it stands for, and the error under ``error``."""
    error = {"type": error_type, "code": code, "message": message, "param": None}
    return json.dumps({"type": "error", "status": status, "error": error}).encode()


def _websocket(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    """The WebSocket faults: the close frames, the cut socket, the stalls, the error message, the second
    response on one connection. Each message is one event's JSON (no SSE framing)."""
    text = _messages(text_stream(fmt, TEXT))
    hello = _escaped(TEXT[0])
    preamble = _before(text, hello)
    through_text = _through(text, hello)
    D, EOF = _T.DISCONNECTED, _T.EOF_WITHOUT_TERMINAL
    one, two = dict(WEBSOCKET), {**WEBSOCKET, "responses": 2}

    def play(messages: Iterable[bytes], *tail: Step) -> tuple[Step, ...]:
        return (Upgrade(), *(Send(message) for message in messages), *tail)

    rows: list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]] = [
        (
            "ws-clean-close",
            "over a WebSocket: the whole response, then a close frame 1000: a clean end",
            play(text, WsClose(1000)),
            COMPLETED,
            {"meta": one},
        ),
        (
            "ws-text-then-close-1000",
            "over a WebSocket: visible text, then a close frame 1000 before the terminal event",
            play(through_text, WsClose(1000)),
            _shown(_C.MID_GENERATION, EOF, "eof_without_terminal"),
            {"meta": one},
        ),
        (
            "ws-text-then-close-1011",
            "over a WebSocket: visible text, then a close frame 1011 (internal error) before the terminal"
            " event",
            play(through_text, WsClose(1011, "internal error")),
            _shown(_C.MID_GENERATION, EOF, "eof_without_terminal"),
            {"meta": one},
        ),
        (
            "ws-text-then-close-without-code",
            "over a WebSocket: visible text, then a close frame without a code (1005) before the terminal"
            " event",
            play(through_text, WsClose(None)),
            _shown(_C.MID_GENERATION, EOF, "eof_without_terminal"),
            {"meta": one},
        ),
        (
            "ws-text-then-fin",
            "over a WebSocket: visible text, then FIN without a close frame (1006)",
            play(through_text, Fin()),
            _shown(_C.MID_GENERATION, D, "closed_mid_body"),
            {"meta": one},
        ),
        (
            "ws-text-then-rst",
            "over a WebSocket: visible text, then a TCP reset",
            play(through_text, Rst()),
            _shown(_C.MID_GENERATION, D, "reset"),
            {"meta": one},
        ),
        (
            "ws-upgrade-then-fin",
            "over a WebSocket: the upgrade and the request, then FIN before any event",
            play((), Fin()),
            _safe(_C.EARLY_STREAM, D, _P.EARLY_STREAM, "closed_mid_body"),
            {"meta": one},
        ),
        (
            "ws-first-token-stall",
            "over a WebSocket: bookkeeping events, then silence: the first-token watchdog fires",
            play(preamble, Stall()),
            _safe(_C.WATCHDOG, _T.FIRST_TOKEN_TIMEOUT, _P.EARLY_STREAM, "first_token_timeout"),
            {"meta": one, "config": {"first_token_timeout": WATCHDOG_S}},
        ),
        (
            "ws-text-then-stall",
            "over a WebSocket: visible text, then silence with the socket open: the idle watchdog fires",
            play(through_text, Stall()),
            _shown(_C.WATCHDOG, _T.IDLE_TIMEOUT, "idle_timeout"),
            {"meta": one, "config": {"idle_timeout": WATCHDOG_S}},
        ),
        (
            "ws-connection-refused",
            "a WebSocket to a port nobody listens on",
            (),
            _safe(_C.BEFORE_CONNECTION, _T.CONNECT_FAILED, _P.BEFORE_CONNECTION, "refused"),
            {"meta": one, "no_listener": True},
        ),
        (
            "ws-stall-before-upgrade",
            "the server reads the upgrade request and never answers: the connect watchdog fires",
            (Stall(),),
            _safe(_C.WATCHDOG, _T.CONNECT_TIMEOUT, _P.BEFORE_CONNECTION, "connect_timeout"),
            {"meta": one, "config": {"connect_timeout": WATCHDOG_S}},
        ),
        (
            "ws-upgrade-refused-401",
            "the upgrade is refused with 401 and an OpenAI error body: an HTTP error, as over HTTP",
            (
                Status(
                    401,
                    JSON_HEADERS,
                    _openai_error("Incorrect API key", "invalid_request_error", "invalid_api_key"),
                ),
            ),
            _expect(
                _C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "auth", _A.FIX_REQUEST
            ),
            {"meta": one},
        ),
        (
            "ws-error-rate-limit",
            "over a WebSocket: an error message (status 429, rate_limit_exceeded) before any output",
            play(preamble, Send(_ws_error(429, "requests", "rate_limit_exceeded", "Rate limit reached"))),
            _safe(
                _C.PROVIDER_ERROR,
                _T.PROVIDER_ERROR_EVENT,
                _P.EARLY_STREAM,
                "rate_limit",
                _A.RETRY_AFTER_BACKOFF,
            ),
            {"meta": one},
        ),
        (
            "ws-error-previous-response-not-found",
            "over a WebSocket: the error message WebSocket mode sends for a previous_response_id it does not"
            " hold (status 400): the request must change (send the whole input)",
            play(
                (), Send(_ws_error(400, "invalid_request_error", "previous_response_not_found", "Not found"))
            ),
            _expect(
                _C.PROVIDER_ERROR,
                _V.NO_RETRY,
                _T.PROVIDER_ERROR_EVENT,
                _P.EARLY_STREAM,
                "not_found",
                _A.FIX_REQUEST,
            ),
            {"meta": one},
        ),
        (
            "ws-second-response",
            "over a WebSocket: a whole response, the next response.create, a second whole response on the"
            " same connection (two runs, the second checked)",
            play(text, NextCreate(), *(Send(message) for message in text)),
            COMPLETED,
            {"meta": two},
        ),
        (
            "ws-second-response-cut",
            "over a WebSocket: a whole response, then the second response on the same connection cut after"
            " visible text by a FIN without a close frame",
            play(text, NextCreate(), *(Send(message) for message in through_text), Fin()),
            _shown(_C.MID_GENERATION, D, "closed_mid_body"),
            {"meta": two},
        ),
    ]
    return rows


def _for_format(fmt: Format) -> list[Scenario]:
    # Ollama's and Bedrock's real-world shapes follow their format's own rows, whatever their family.
    real_world = [row for family in REAL_WORLD_FAMILIES for row in _real_world(fmt, family)]
    if fmt in NDJSON_FORMATS:
        rows = [*_connection(fmt), *_ollama(), *real_world]
    elif fmt in EVENT_STREAM_FORMATS:
        rows = [*_bedrock(fmt), *real_world]
    else:
        rows = _sse_rows(fmt)
    return [
        Scenario(f"{fmt}/{slug}", script, format=fmt, description=text, **expect, **extra)
        for slug, text, script, expect, extra in rows
    ]


def _sse_rows(fmt: Format) -> list[tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]]:
    rows = _connection(fmt)
    rows += [(slug, text, script, expect, {}) for slug, text, script, expect in _http_errors(fmt)]
    rows += _streams(fmt)
    rows += _limits(fmt)
    rows += _evidence(fmt)
    rows += _real_world(fmt, "error")
    rows += _content_shapes(fmt)
    rows += _real_world(fmt, "content")
    rows += _whole_calls(fmt)
    rows += tool_kind_rows(fmt)
    if format_named(fmt).websocket_path is not None:
        rows += _websocket(fmt)
    return rows


@cache
def _by_name() -> dict[str, Scenario]:
    scenarios: dict[str, Scenario] = {}
    for fmt in WIRE_FORMATS:
        for scenario in _for_format(fmt):
            if scenario.name in scenarios:
                raise AssertionError(f"duplicate scenario name {scenario.name!r}")
            scenarios[scenario.name] = scenario
    return scenarios


def catalog(formats: Iterable[str] | str | None = None) -> list[Scenario]:
    """Every catalog scenario, in a stable order; ``formats`` keeps only those formats."""
    wanted: Callable[[Scenario], bool]
    if formats is None:
        wanted = lambda scenario: True  # noqa: E731
    else:
        chosen = {formats} if isinstance(formats, str) else set(formats)
        unknown = chosen - set(WIRE_FORMATS)
        if unknown:
            known = ", ".join(WIRE_FORMATS)
            raise ValueError(f"unknown format(s) {sorted(unknown)}; expected some of {known}")
        wanted = lambda scenario: scenario.format in chosen  # noqa: E731
    return [scenario for scenario in _by_name().values() if wanted(scenario)]


def names() -> list[str]:
    return list(_by_name())


def find(name: str) -> Scenario:
    """The catalog scenario called ``name`` (e.g. ``"openai-chat/text-then-fin"``)."""
    try:
        return _by_name()[name]
    except KeyError:
        close = difflib.get_close_matches(name, _by_name(), n=4, cutoff=0.75)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"no scenario named {name!r}{hint}") from None
