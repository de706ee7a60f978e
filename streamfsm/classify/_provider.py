"""A provider's error (HTTP status, headers, body, or an in-band error event) becomes a ``ProviderError``.

Body codes, types and statuses are read as **words** (``code_words``: split on ``_``, ``-``, ``.``, spaces
and camel case, case-folded) and matched against a table of word rules with a source per entry
(``SPECIFIC_WORDS``, ``GENERIC_WORDS``), so ``too_many_requests``, ``rate_limit_exceeded``,
``RESOURCE_EXHAUSTED``, ``TooManyRequests`` and ``rate limit`` meet in one place. Evidence is weighed in a
fixed order, and the markers say which piece decided:

1. A specific body value that settles the kind: money, quota and plan limits first (``insufficient_quota``,
   ``credit_balance_exhausted``, ``*_spend_limit_reached``, ``billing_error``, ``payment_required``,
   ``budget_exceeded``, ...: ``quota_exhausted``), then what the request must change (context length, too
   large, content filter, not found, credentials). Gemini ``details`` count here: a per-day quota is
   ``quota_exhausted``, a per-minute one a rate limit, whatever the message says.
2. A 402 status with no specific body value: ``quota_exhausted``.
3. Money, quota and plan-limit **language in the message** ("exceeded your current quota", "insufficient
   balance", "used all available credits", "monthly spending limit", "usage limits", "budget has been
   exceeded", ...: ``MONEY_PHRASES``): ``quota_exhausted`` under any status, over a rate-limit or overload
   code, at LOW confidence, the phrase's name in the markers (``message=money:<name>``). No wait cures these.
   But a quota, usage or plan limit per minute or second (``SHORT_WINDOW``), or one whose stated wait is
   within ``LONGEST_AUTOMATIC_WAIT_S`` (Gemini's per-minute quota with a ``RetryInfo`` of seconds), is a
   rate limit, as for codes.
4. The remaining specific body values (``rate_limit``, ``overloaded``, ``permission``), then the HTTP status
   (``401`` auth, ``429`` rate limit, ``529`` overloaded, ...; for an in-band error, an HTTP status its body
   carries as ``code``). A status of 200 says nothing: an Anthropic in-band ``event: error`` reaches the SDK
   as ``APIStatusError(status_code=200)``.
5. A generic body value (``invalid_request_error``, ``api_error``, ``INVALID_ARGUMENT``, ...), then, when
   nothing else named the kind, "rate limit" / "overloaded" in the message (LOW).
6. The message, only to tell which size or which limit, and recorded in the markers:

   * a rate limit whose request alone exceeds the window's whole budget can never succeed by waiting: it is
     ``request_too_large`` when the status is 413 (Groq's 413 with code ``rate_limit_exceeded``: HIGH), or
     when the message quotes ``Limit N, Requested M`` with M > N (OpenAI's 429 "Request too large for
     <model> ... Limit 30000, Requested 30601": MEDIUM), or says "request too large" / "reduce your message
     size" without numbers (LOW). A quote with M <= N ("Limit 30000, Used 29000, Requested 1500") is an
     ordinary rate limit, whatever else the message says;
   * an invalid request or a size error whose message speaks of the context window or a too-long prompt is
     ``context_overflow`` (Anthropic's "prompt is too long", Gemini's input token count, Anthropic's 413
     "Request size exceeds model context window"): LOW.

   Status, code, type and message each mislead in some provider (a 413 carrying a rate-limit code, a 429
   that no wait can cure, a 400 or 500 that is really a spent balance), so the kind is decided from all of
   them together, in this order.

The wait (``retry_after_s``): ``retry-after-ms`` / ``retry-after``, else Gemini's ``RetryInfo``, else the
reset of a rate limit whose remaining count is 0 (``x-ratelimit-reset-*``, ``anthropic-ratelimit-*-reset``),
else a wait stated in the message ("Please try again in 9m38.016s", "resets in 5 hours"). Whether a wait that
long may be automatic is the verdict's business (``LONGEST_AUTOMATIC_WAIT_S``). A rate limit per
day or month with no stated wait at all ("1000 API calls / month", "free-models-per-day") is a plan limit:
``quota_exhausted``, LOW, ``message=money:plan_window``.

Shapes understood: OpenAI ``{"error": {"message", "type", "param", "code"}}`` (and the SDK's flattened inner
object), the Responses API's flat ``{"type": "error", "code", …}``, nested ``{"type": "error", "error": {…}}``
and ``response.failed`` events, Anthropic ``{"type": "error", "error": {"type", "message"}}``, Gemini
``{"error": {"code", "message", "status", "details"}}`` (also wrapped in a one-element list), ``{"error":
"text"}`` (xAI, proxies) and FastAPI's ``{"detail": "text"}`` (LiteLLM).

Nothing from the message is kept, and ``type``/``code`` are kept only when they look like identifiers with no
credential in them: a hostile or buggy body cannot smuggle text into records (a code matched but not fit to
keep is marked by the rule's words, ``body.code~rate_limit``).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Final

from ._redact import redact_text
from ._taxonomy import LONGEST_AUTOMATIC_WAIT_S, Confidence, ProviderError, ProviderErrorKind

__all__ = [
    "parse_retry_after",
    "provider_error_from_document",
    "provider_error_from_event",
    "provider_error_from_http",
    "provider_error_from_sdk",
]

_P = ProviderErrorKind

MAX_BODY_BYTES: Final = 64 * 1024
# Only a guard against nonsense (a date decades away): the retry policy decides what delay is too long, so
# it must see the provider's real request.
RETRY_AFTER_CAP_S: Final = 86_400.0
_MAX_MESSAGE: Final = 2000
_MAX_DETAILS: Final = 16
_MAX_SAID: Final = 128
_MAX_HEADER_VALUE: Final = 64

# 408 and 409 are transient on these APIs (the official SDKs retry both), so they count as server errors.
_STATUS_KIND: Final = {
    400: _P.INVALID_REQUEST,
    401: _P.AUTH,
    402: _P.QUOTA_EXHAUSTED,
    403: _P.PERMISSION,
    404: _P.NOT_FOUND,
    408: _P.SERVER_ERROR,
    409: _P.SERVER_ERROR,
    413: _P.REQUEST_TOO_LARGE,
    422: _P.INVALID_REQUEST,
    429: _P.RATE_LIMIT,
    500: _P.SERVER_ERROR,
    502: _P.SERVER_ERROR,
    503: _P.SERVER_ERROR,
    504: _P.SERVER_ERROR,
    529: _P.OVERLOADED,
}
_WEAK_STATUSES: Final = frozenset({408, 409})


@dataclass(frozen=True, slots=True)
class WordRule:
    """Body codes, types or statuses holding all of ``words`` and none of ``unless`` are ``kind``; ``source``
    says who sends them."""

    words: tuple[str, ...]
    kind: ProviderErrorKind
    source: str
    unless: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return "_".join(self.words)


def _rule(words: str, kind: ProviderErrorKind, source: str, unless: tuple[str, ...] = ()) -> WordRule:
    return WordRule(tuple(words.split()), kind, source, unless)


@dataclass(frozen=True, slots=True)
class MoneyPhrase:
    """Money, quota or plan-limit language in a message; ``name`` (never the text) goes into the markers.
    ``limit``: a limit on use rather than money spent, so a rate limit when the message names a short window
    (``SHORT_WINDOW``)."""

    name: str
    pattern: re.Pattern[str]
    source: str
    limit: bool = False


def _phrase(name: str, pattern: str, source: str, *, limit: bool = False) -> MoneyPhrase:
    return MoneyPhrase(name, re.compile(pattern, re.IGNORECASE), source, limit)


# A budget that is not money: tokens, thinking or time run out per request or per window, and a smaller
# request or a wait cures them (Anthropic thinking.budget_tokens, Gemini thinkingBudget, gateways' token
# budgets per minute).
NOT_MONEY_BUDGETS: Final = ("token", "tokens", "thinking", "reasoning", "time", "retry", "compute", "latency")

# Body codes, types and statuses are read as words (see ``code_words``): a rule matches a value holding all
# its words, in any order, spelling or case, so ``insufficient_quota``, ``InsufficientQuota`` and
# ``QUOTA-INSUFFICIENT`` meet. The first matching rule wins, so money comes first.
SPECIFIC_WORDS: Final = (
    # a concurrency reservation, not money: it frees itself
    _rule("in flight", _P.RATE_LIMIT, "OpenRouter 402 in_flight_budget_exhausted"),
    # money, quota and plan limits: waiting does not cure them
    # (not a rate quota: Alibaba Model Studio's 429 Throttling.RateQuota lifts by itself)
    _rule(
        "quota",
        _P.QUOTA_EXHAUSTED,
        "OpenAI 429 insufficient_quota, Moonshot exceeded_current_quota_error",
        ("rate",),
    ),
    _rule("billing", _P.QUOTA_EXHAUSTED, "OpenAI billing_hard_limit_reached, Anthropic 402 billing_error"),
    _rule("credit", _P.QUOTA_EXHAUSTED, "OpenAI 429 credit_balance_exhausted"),
    _rule(
        "credits", _P.QUOTA_EXHAUSTED, "OpenRouter 402 insufficient credits, gateways' insufficient_credits"
    ),
    _rule(
        "balance",
        _P.QUOTA_EXHAUSTED,
        "DeepSeek 402 Insufficient Balance, gateways' insufficient_balance",
        ("load",),  # a load balance error is a gateway's, not money
    ),
    _rule(
        "spend limit",
        _P.QUOTA_EXHAUSTED,
        "Anthropic *_spend_limit_reached, OpenAI 429 *_spend_limit_exceeded",
    ),
    _rule("spending limit", _P.QUOTA_EXHAUSTED, "xAI 403 monthly spending limit"),
    _rule("usage limit", _P.QUOTA_EXHAUSTED, "OpenAI 429 organization_usage_limit_exceeded"),
    _rule("payment", _P.QUOTA_EXHAUSTED, "OpenRouter, Mistral, Cohere 402 payment_required"),
    _rule(
        "budget",
        _P.QUOTA_EXHAUSTED,
        "LiteLLM proxy budget_exceeded, OpenRouter 402 weight_exceeds_budget",
        NOT_MONEY_BUDGETS,
    ),
    _rule("arrearage", _P.QUOTA_EXHAUSTED, "Alibaba Model Studio (Qwen) code Arrearage"),
    # what the request must change
    _rule("context length", _P.CONTEXT_OVERFLOW, "OpenAI, OpenRouter context_length_exceeded"),
    _rule("context window", _P.CONTEXT_OVERFLOW, "Anthropic model_context_window_exceeded"),
    _rule("context size", _P.CONTEXT_OVERFLOW, "llama.cpp server exceed_context_size_error"),
    _rule("too large", _P.REQUEST_TOO_LARGE, "Anthropic 413 request_too_large, *_too_large_after_decoding"),
    _rule("content filter", _P.CONTENT_FILTER, "OpenAI, Azure OpenAI content_filter"),
    _rule(
        "policy violation",
        _P.CONTENT_FILTER,
        "OpenAI content_policy_violation, Azure ResponsibleAIPolicyViolation",
    ),
    _rule("bio policy", _P.CONTENT_FILTER, "OpenAI Responses bio_policy"),
    _rule("not found", _P.NOT_FOUND, "Anthropic not_found_error, Gemini NOT_FOUND, OpenAI model_not_found"),
    _rule("service blocked", _P.PERMISSION, "Gemini ErrorInfo API_KEY_SERVICE_BLOCKED"),
    _rule("invalid api key", _P.AUTH, "OpenAI invalid_api_key, Gemini ErrorInfo API_KEY_INVALID"),
    _rule("authentication", _P.AUTH, "Anthropic 401 authentication_error"),
    _rule("unauthenticated", _P.AUTH, "Gemini UNAUTHENTICATED"),
    _rule("permission", _P.PERMISSION, "Anthropic permission_error, Gemini PERMISSION_DENIED"),
    _rule("unsupported country", _P.PERMISSION, "OpenAI unsupported_country_region_territory"),
    # waiting helps
    _rule("overloaded", _P.OVERLOADED, "Anthropic 529 overloaded_error, OpenAI server_is_overloaded"),
    _rule("unavailable", _P.OVERLOADED, "Gemini 503 UNAVAILABLE (the model is overloaded)"),
    _rule("rate limit", _P.RATE_LIMIT, "OpenAI, Groq rate_limit_exceeded; Anthropic, xAI rate_limit_error"),
    _rule("ratelimit", _P.RATE_LIMIT, "one-word spellings (RatelimitExceeded)"),
    _rule("too many requests", _P.RATE_LIMIT, "OpenAI Responses too_many_requests, HTTP 429's reason phrase"),
    _rule("resource exhausted", _P.RATE_LIMIT, "Gemini, Vertex AI 429 RESOURCE_EXHAUSTED"),
    _rule("throttling", _P.RATE_LIMIT, "Amazon Bedrock ThrottlingException"),
    _rule("throttled", _P.RATE_LIMIT, "gateways' throttled"),
)
# A quota per short window is a rate limit, whatever it is called (Gemini per-minute quotas).
_RATE_WINDOW_WORDS: Final = frozenset({"minute", "min", "second", "sec", "rpm", "tpm", "rps", "tps"})
# Kinds a body value settles: the message's money words cannot overrule them.
_FIRM: Final = frozenset(
    {_P.QUOTA_EXHAUSTED, _P.CONTEXT_OVERFLOW, _P.REQUEST_TOO_LARGE, _P.CONTENT_FILTER, _P.NOT_FOUND, _P.AUTH}
)
# Broad categories: they decide only when the status does not.
GENERIC_WORDS: Final = (
    _rule("invalid request", _P.INVALID_REQUEST, "OpenAI, Anthropic invalid_request_error"),
    _rule("invalid argument", _P.INVALID_REQUEST, "Gemini INVALID_ARGUMENT"),
    _rule("invalid prompt", _P.INVALID_REQUEST, "OpenAI Responses invalid_prompt"),
    _rule("failed precondition", _P.INVALID_REQUEST, "Gemini FAILED_PRECONDITION"),
    _rule("out of range", _P.INVALID_REQUEST, "Gemini OUT_OF_RANGE"),
    _rule("data residency", _P.INVALID_REQUEST, "OpenAI Responses data_residency_mismatch"),
    _rule("api error", _P.SERVER_ERROR, "Anthropic api_error"),
    _rule("server error", _P.SERVER_ERROR, "OpenAI server_error"),
    _rule("timeout", _P.SERVER_ERROR, "Anthropic timeout_error, OpenAI Responses vector_store_timeout"),
    _rule("internal", _P.SERVER_ERROR, "Gemini INTERNAL"),
    _rule("deadline exceeded", _P.SERVER_ERROR, "Gemini DEADLINE_EXCEEDED"),
    _rule("aborted", _P.SERVER_ERROR, "Gemini ABORTED"),
    _rule("validation", _P.INVALID_REQUEST, "Amazon Bedrock ValidationException (also in-band)"),
    _rule("model stream error", _P.SERVER_ERROR, "Amazon Bedrock modelStreamErrorException, in-band"),
)
# The last, low-confidence fallback: money, quota and plan-limit language in the message decides under any
# status.
MONEY_PHRASES: Final = (
    _phrase(
        "current_quota",
        r"exceeded your (?:current )?quota\b",
        "OpenAI 429 insufficient_quota, Moonshot 429, Gemini 429 without per-minute details, W&B 402",
        limit=True,
    ),
    _phrase(
        "balance",
        r"insufficient (?:account )?balance|balance (?:is )?(?:too low|insufficient|not enough)",
        "DeepSeek 402 'Insufficient Balance', Anthropic 400 'Your credit balance is too low', Zhipu 1113",
    ),
    _phrase("balance", r"余额不足|欠费", "DeepSeek 402, Zhipu 1113 (Chinese docs)"),
    _phrase(
        "credits",
        r"\binsufficient credits?\b|\b(?:out of|no|all available|run out of) credits?\b",
        "OpenRouter 402 'Insufficient credits', xAI 403/429 'used all available credits'",
    ),
    _phrase(
        "credits",
        r"\bcredits? (?:are |have been |has been )?(?:used up|exhausted|depleted)",
        "prepaid-credit providers and gateways",
    ),
    _phrase("billing_limit", r"billing hard limit|billing limit", "OpenAI billing_hard_limit_reached"),
    _phrase(
        "spend_limit",
        r"\bspend(?:ing)? (?:limit|cap)\b",
        "xAI 'reached its monthly spending limit', Together 402, Mistral 402, Claude 'monthly spend limit'",
    ),
    _phrase(
        "usage_limit",
        r"\busage limits?\b",
        "Anthropic 400 'You have reached your specified API usage limits', Kimi 403, Claude 'usage limit'",
        limit=True,
    ),
    _phrase(
        "usage_limit",
        r"使用上限|用量上限|(?:额度|配额)已?(?:用完|用尽|耗尽|不足)",
        "Zhipu (GLM Coding Plan) 429 1308 '已达到 5 小时的使用上限' with type rate_limit_error",
        limit=True,
    ),
    _phrase("plan_limit", r"套餐已到期", "Zhipu (GLM Coding Plan) 429 1309 '套餐已到期' (the plan expired)"),
    _phrase(
        "plan_limit",
        r"(?:monthly|plan|subscription) (?:usage |request |token )?(?:limit|quota|allowance)",
        "monthly and plan allowances (Together 402, Kimi, coding plans)",
        limit=True,
    ),
    _phrase("payment_required", r"payment required", "the 402 reason phrase (OpenRouter, Mistral, Cohere)"),
    _phrase(
        "budget",
        "".join(rf"(?<!{word}[ _-])" for word in NOT_MONEY_BUDGETS)
        + r"budget (?:has been |was )?(?:exceeded|reached|exhausted)|(?:exceeded|over) (?:your |the )?budget"
        r"|max budget",
        "LiteLLM proxy 'Budget has been exceeded!', 'Max budget limit reached.'",
    ),
    _phrase(
        "arrears",
        r"in arrears|arrearage|account is not in good standing",
        "Alibaba Model Studio Arrearage, Zhipu (English)",
    ),
)
# A quota, usage or plan limit per minute or second is a rate limit, as for codes (``_RATE_WINDOW_WORDS``).
SHORT_WINDOW: Final = _phrase(
    "short_window",
    r"\bper[- ]?(?:minute|min|second|sec)\b|\b(?:this|a|one) (?:minute|second)\b|\b(?:rpm|tpm|rps|tps)\b"
    r"|/ ?(?:minute|min|second|sec)\b|每分钟|每秒",
    "OpenAI, Groq 'tokens per min (TPM)', gateways' 'requests per minute' quotas and usage limits",
)
# A rate limit per day or month with no stated wait is a plan limit: nothing says when it lifts, and it is not
# within any automatic retry (Gemini's per-day QuotaFailure is read the same way).
PLAN_WINDOW: Final = _phrase(
    "plan_window",
    r"\bper[- ](?:day|month)\b|/ ?(?:day|month)\b|\b(?:daily|monthly) (?:limit|quota|cap)",
    "OpenRouter in-band 429 'free-models-per-day', Cohere 429 trial key '1000 API calls / month'",
)
# Said in words when nothing else names the kind (an in-band {"error": {"message": "Rate limit exceeded"}}).
_WAIT_PHRASES: Final = (
    ("rate_limit", re.compile(r"rate.?limit|too many requests", re.IGNORECASE), _P.RATE_LIMIT),
    ("overloaded", re.compile(r"overloaded", re.IGNORECASE), _P.OVERLOADED),
    ("server_busy", re.compile(r"server busy", re.IGNORECASE), _P.OVERLOADED),  # Ollama: its queue is full
)
# "Please try again in 9m38.016s" (Groq, OpenAI), "Please retry in 10h17m5.7s" (Gemini), "Please retry after
# 2 seconds" (Azure OpenAI), "resets in 5 hours".
_DURATION_UNIT: Final = r"(?:milliseconds?|ms|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)(?![a-z])"
_RETRY_IN_RE: Final = re.compile(
    r"(?:try again|retry|resets?|available again)\s+(?:in|after)\s+"
    rf"((?:[0-9]{{1,6}}(?:\.[0-9]{{1,9}})?\s?{_DURATION_UNIT}(?:\s*,?\s*(?:and\s+)?)?){{1,4}})",
    re.IGNORECASE,
)
_DURATION_PART_RE: Final = re.compile(r"([0-9]{1,6}(?:\.[0-9]{1,9})?)\s?([a-z]+)", re.IGNORECASE)
_UNIT_S: Final = {
    "ms": 0.001,
    "millisecond": 0.001,
    "h": 3600.0,
    "hour": 3600.0,
    "hr": 3600.0,
    "m": 60.0,
    "minute": 60.0,
    "min": 60.0,
    "s": 1.0,
    "second": 1.0,
    "sec": 1.0,
}
_WORD_RE: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

_CONTEXT_OVERFLOW_RE: Final = re.compile(
    r"prompt is too long|maximum context length|context (?:length|window|size)|input token count"
    r"|exceeds the maximum number of tokens|too many (?:input )?tokens"
    r"|reduce the length of the (?:messages|prompt)",
    re.IGNORECASE,
)
# "Limit 30000, Requested 30601" (OpenAI, Groq): the request alone against the window's whole budget.
_LIMIT_REQUESTED_RE: Final = re.compile(
    r"\blimit\W{0,3}([0-9][0-9,]{0,15})\b[^.;]{0,80}?\brequested\W{0,3}([0-9][0-9,]{0,15})\b", re.IGNORECASE
)
_REQUEST_TOO_LARGE_RE: Final = re.compile(
    r"request too large|reduce your message size|request (?:is )?too (?:large|big)", re.IGNORECASE
)
_TOKEN_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,63}")
_SECONDS_RE: Final = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,9})?")
_RETRY_DELAY_RE: Final = re.compile(r"([0-9]{1,9}(?:\.[0-9]{1,9})?)s")
_TOO_MANY_DIGITS_RE: Final = re.compile(r"[0-9]{13,}(?:\.[0-9]*)?")
_HUGE_YEAR_RE: Final = re.compile(r"[A-Za-z]{3} [0-9]{5,} [0-9]{1,2}:")
_DATE_RE: Final = re.compile(r"[A-Za-z]{3}, [0-9]{1,2} [A-Za-z]{3} [0-9]{4,} [0-9:]{8} GMT")
_MAX_HEADER_PIECES: Final = 8


# -- retry-after --------------------------------------------------------------------------------------------


def _lower_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    if not isinstance(headers, Mapping):
        return out
    try:
        items = list(headers.items())
    except Exception:
        return out
    for name, value in items:
        if isinstance(name, bytes):
            name = name.decode("latin-1")
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        if isinstance(name, str) and isinstance(value, str):
            out.setdefault(name.strip().lower(), value.strip())
    return out


def _seconds(text: str) -> float | None:
    if len(text) > _MAX_HEADER_VALUE or not _SECONDS_RE.fullmatch(text):
        return None  # negative, signed, exponent, non-ASCII digits and junk all land here
    value = float(text)
    return value if math.isfinite(value) else None


def _http_date(text: str, now: float) -> float | None:
    if len(text) > _MAX_HEADER_VALUE:
        return None
    try:
        when = parsedate_to_datetime(text)
        at = (when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(0.0, at - now)  # a date in the past means "now"


def _over_limit(text: str) -> bool:
    """A value that says "later than anything we can represent": more digits than we parse, or a date whose
    year has five digits or more. Dropping it would make the retry *sooner* than a value that parsed."""
    return bool(_TOO_MANY_DIGITS_RE.fullmatch(text) or _HUGE_YEAR_RE.search(text))


def _header_values(name: str, text: str, now: float, cap: float) -> list[tuple[float, str]]:
    """Every delay one header gives (none for an absent header, ""). A repeated header arrives joined by
    commas; an HTTP date holds a comma itself, so dates are taken out whole before the rest is split."""
    ms = name == "retry-after-ms"

    def one(piece: str) -> float | None:
        value = _seconds(piece)
        if value is None and not ms:
            value = _http_date(piece, now)
        return value

    pieces = [text] if text else []
    if "," in text and (text.count(",") > 1 or one(text) is None):  # one date holds at most one comma
        dates = [] if ms else _DATE_RE.findall(text)
        rest = text if ms else _DATE_RE.sub(",", text)
        pieces = dates + [p.strip() for p in rest.split(",") if p.strip()]
    found: list[tuple[float, str]] = []
    for piece in pieces[:_MAX_HEADER_PIECES]:
        value = one(piece)
        if value is not None:
            found.append((min(value / 1000.0 if ms else value, cap), f"header={name}"))
        elif _over_limit(piece):
            found.append((cap, f"header={name}:over_limit"))
    return found


def _retry_after(headers: dict[str, str], now: float | None, cap_s: float) -> tuple[float, str] | None:
    """The longest delay any ``retry-after-ms`` or ``retry-after`` value asks for (they may disagree, or a
    header may repeat: waiting the longest is never too early for any of them); an over-limit value counts
    as the cap. Milliseconds whose rounding up gives the seconds header agree with it and are kept."""
    cap = max(0.0, cap_s)
    clock = time.time() if now is None else now
    ms = _header_values("retry-after-ms", headers.get("retry-after-ms", ""), clock, cap)
    seconds = _header_values("retry-after", headers.get("retry-after", ""), clock, cap)
    if len(ms) == 1 and len(seconds) == 1 and seconds[0][0] == math.ceil(ms[0][0]):
        return ms[0]  # they agree (seconds are the milliseconds rounded up): keep the precise one
    found = ms + seconds
    if not found:
        return None
    return max(found, key=lambda item: item[0])


def parse_retry_after(
    headers: Mapping[str, str], *, now: float | None = None, cap_s: float = RETRY_AFTER_CAP_S
) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` and ``retry-after`` (seconds or an HTTP date): the longest
    of all the values given, when they disagree or a header repeats.

    Header names are case-insensitive; negative or unparseable values give None; the result is capped at
    ``cap_s``, and a value too large to parse (13 digits, a five-digit year) counts as ``cap_s``, never as
    absent. ``now`` (epoch seconds) is for HTTP dates, and defaults to the wall clock.
    """
    found = _retry_after(_lower_headers(headers), now, cap_s)
    return None if found is None else found[0]


# Rate-limit headers: when a limit's remaining count is 0, its reset is the earliest a request can pass.
# (remaining header, reset header), per provider.
_LIMIT_HEADERS: Final = (
    # OpenAI, Groq, xAI, Together: a duration ("1s", "6m0s", "2m59.56s", "20ms")
    *((f"x-ratelimit-remaining-{d}", f"x-ratelimit-reset-{d}") for d in ("requests", "tokens")),
    # Anthropic: an RFC 3339 time
    *(
        (f"anthropic-ratelimit-{d}-remaining", f"anthropic-ratelimit-{d}-reset")
        for d in ("requests", "tokens", "input-tokens", "output-tokens")
    ),
)
_GO_DURATION_RE: Final = re.compile(r"(?:[0-9]{1,6}(?:\.[0-9]{1,9})?(?:ms|h|m|s))+")


def _reset_in(text: str, now: float) -> float | None:
    """Seconds until a reset given as a duration ("6m0s"), plain seconds, or an RFC 3339 time."""
    if len(text) > _MAX_HEADER_VALUE:
        return None
    if _GO_DURATION_RE.fullmatch(text):
        return sum(float(n) * _UNIT_S[u] for n, u in _DURATION_PART_RE.findall(text))
    if (seconds := _seconds(text)) is not None:
        return seconds
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    at = (when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)).timestamp()
    return max(0.0, at - now)


def _exhausted_reset(headers: dict[str, str], now: float) -> tuple[float, str] | None:
    """The latest reset among the limits whose remaining count is 0, and its marker."""
    found = [
        (value, f"header={reset}")
        for remaining, reset in _LIMIT_HEADERS
        if headers.get(remaining) == "0" and (value := _reset_in(headers.get(reset, ""), now)) is not None
    ]
    return max(found, key=lambda item: item[0]) if found else None


# -- bodies -------------------------------------------------------------------------------------------------


def _parse_body(body: object) -> object:
    if body is None or isinstance(body, (Mapping, list, tuple)):
        return body
    if isinstance(body, (bytes, bytearray, memoryview)):
        text = bytes(body[:MAX_BODY_BYTES]).decode("utf-8", "replace")
    elif isinstance(body, str):
        text = body[:MAX_BODY_BYTES]
    else:
        return None
    text = text.strip()
    if text.startswith(("data:", "event:")):  # an error sent as one SSE event
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = data[0] if data else ""
    if not text.startswith(("{", "[")):
        return None
    try:
        parsed: object = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return parsed


def _error_object(payload: object) -> tuple[Mapping[object, object], bool] | None:
    """The mapping that describes the error, and whether it is the payload itself (a flat shape)."""
    if isinstance(payload, (list, tuple)):
        payload = payload[0] if payload else None  # Gemini sometimes wraps it in a list (one level only)
    if not isinstance(payload, Mapping):
        return None
    error = payload.get("error")
    if isinstance(error, Mapping):
        return error, False
    response = payload.get("response")
    if isinstance(response, Mapping) and isinstance(response.get("error"), Mapping):
        return response["error"], False  # Responses API response.failed
    if any(k in payload for k in ("code", "type", "status", "message", "error", "detail")):
        return payload, True
    return None


def _token(value: object) -> str | None:
    """A body value fit to keep: an identifier, with nothing that looks like a credential."""
    if not isinstance(value, str) or not _TOKEN_RE.fullmatch(value):
        return None
    return value if redact_text(value, limit=128) == value else None


@dataclass(frozen=True, slots=True)
class _Fields:
    type: str | None = None  # error.type (OpenAI, Anthropic)
    code: str | None = None  # error.code (OpenAI), details.error_code (Anthropic), ErrorInfo.reason (Gemini)
    status_name: str | None = None  # Gemini error.status
    http_code: int | None = None  # a numeric error.code (Gemini, OpenRouter, xAI): an HTTP status in the body
    quota_kind: ProviderErrorKind | None = None  # what Gemini's QuotaFailure says (see _quota_kind)
    retry_delay_s: float | None = None
    message: str = ""
    said: tuple[tuple[str, str], ...] = ()  # (label, value as sent): code, type and status, read as words


def _quota_kind(violations: object) -> ProviderErrorKind | None:
    """A violated per-day quota is spent for the day (``quota_exhausted``); per-minute or per-second ones
    are a rate limit; None when the quota ids say neither."""
    kind: ProviderErrorKind | None = None
    for v in violations[:_MAX_DETAILS] if isinstance(violations, (list, tuple)) else ():
        quota_id = v.get("quotaId") if isinstance(v, Mapping) else None
        lowered = quota_id.lower() if isinstance(quota_id, str) else ""
        if "perday" in lowered:
            return _P.QUOTA_EXHAUSTED
        if "perminute" in lowered or "persecond" in lowered:
            kind = _P.RATE_LIMIT
    return kind


def _gemini_details(details: object) -> tuple[str | None, ProviderErrorKind | None, float | None]:
    reason: str | None = None
    quota: ProviderErrorKind | None = None
    delay: float | None = None
    if not isinstance(details, (list, tuple)):
        return reason, quota, delay
    for item in details[:_MAX_DETAILS]:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("@type")
        kind = kind if isinstance(kind, str) else ""
        if kind.endswith("ErrorInfo") and reason is None:
            reason = _token(item.get("reason"))
        elif kind.endswith("QuotaFailure") and quota is not _P.QUOTA_EXHAUSTED:
            quota = _quota_kind(item.get("violations")) or quota
        elif kind.endswith("RetryInfo"):
            text = item.get("retryDelay")
            m = _RETRY_DELAY_RE.fullmatch(text) if isinstance(text, str) else None
            if m is not None:
                delay = float(m.group(1))
    return reason, quota, delay


def _http_code(value: object) -> int | None:
    """An HTTP status sent as the body's code, a number or a numeric string ("429")."""
    if isinstance(value, str) and len(value) == 3 and value.isascii() and value.isdigit():
        value = int(value)
    return value if type(value) is int and 100 <= value <= 599 else None


def _fields(payload: object) -> _Fields:
    found = _error_object(payload)
    if found is None:
        return _Fields()
    error, flat = found
    raw_type = error.get("type")
    # in a flat event, "type" is the event's name ("error", "response.failed"), not the error's
    etype = (
        None
        if flat and (raw_type == "error" or (isinstance(raw_type, str) and "." in raw_type))
        else raw_type
    )
    raw_code = error.get("code")
    http_code = _http_code(raw_code)
    code = _token(raw_code)
    details = error.get("details")
    detail_code = details.get("error_code") if isinstance(details, Mapping) else None
    if isinstance(details, Mapping):  # Anthropic: {"error_code": ...}
        code = _token(detail_code) or code
    reason, quota, delay = _gemini_details(details)
    message = error.get("message")
    if not isinstance(message, str) and flat:
        # {"error": "text"} from some proxies (xAI), {"detail": "text"} from FastAPI servers (LiteLLM)
        message = next((v for v in (error.get("error"), error.get("detail")) if isinstance(v, str)), None)
    sent_code = next((v for v in (reason, detail_code, raw_code) if isinstance(v, str)), None)
    said = tuple(
        (label, value[:_MAX_SAID])
        for label, value in (
            ("body.code", sent_code),
            ("body.type", etype),
            ("body.status", error.get("status")),
        )
        if isinstance(value, str)
    )
    return _Fields(
        type=_token(etype),
        code=reason or code or (str(http_code) if http_code is not None else None),
        status_name=_token(error.get("status")),
        http_code=http_code,
        quota_kind=quota,
        retry_delay_s=delay,
        message=message[:_MAX_MESSAGE] if isinstance(message, str) else "",
        said=said,
    )


def code_words(value: str) -> frozenset[str]:
    """A provider's code or type as words: split on ``_``, ``-``, ``.``, spaces and camel case, case-folded.
    ``too_many_requests``, ``TooManyRequests`` and ``too-many requests`` give the same words."""
    return frozenset(word.casefold() for word in _WORD_RE.findall(value[:128]))


def _match(rules: tuple[WordRule, ...], f: _Fields) -> tuple[ProviderErrorKind, str] | None:
    """The first rule (in table order) whose words the body's code, type or status holds, and its marker:
    the value itself when it is fit to keep, else the rule's words."""
    said = [(label, value, code_words(value)) for label, value in f.said]
    for rule in rules:
        for label, value, held in said:
            if held.issuperset(rule.words) and held.isdisjoint(rule.unless):
                kind = rule.kind
                if kind is _P.QUOTA_EXHAUSTED and held & _RATE_WINDOW_WORDS:
                    kind = _P.RATE_LIMIT  # a quota per minute is a rate limit
                kept = _token(value)
                return kind, f"{label}={kept}" if kept == value else f"{label}~{rule.name}"
    return None


def _money_phrase(message: str) -> MoneyPhrase | None:
    return next((phrase for phrase in MONEY_PHRASES if phrase.pattern.search(message)), None)


def _retry_in(message: str) -> float | None:
    """Seconds from a wait stated in words ("try again in 9m38.016s", "resets in 5 hours")."""
    found = _RETRY_IN_RE.search(message) if message else None
    if found is None:
        return None
    total = 0.0
    for number, unit in _DURATION_PART_RE.findall(found.group(1)):
        unit = unit.lower()
        scale = _UNIT_S.get(unit) or _UNIT_S.get(unit.rstrip("s"))
        if scale is None:
            return None
        total += float(number) * scale
    return total if math.isfinite(total) else None


# -- the decision -------------------------------------------------------------------------------------------


def _status_kind(status: int | None) -> tuple[ProviderErrorKind, Confidence] | None:
    if status is None:
        return None
    if status in _STATUS_KIND:
        return _STATUS_KIND[status], Confidence.MEDIUM if status in _WEAK_STATUSES else Confidence.HIGH
    if 400 <= status <= 499:
        return _P.INVALID_REQUEST, Confidence.MEDIUM
    if 500 <= status <= 599:
        return _P.SERVER_ERROR, Confidence.MEDIUM
    return None


def _decide(
    status: int | None, f: _Fields, wait_s: float | None
) -> tuple[ProviderErrorKind, list[str], Confidence]:
    kind, markers, confidence = _kind(status, f, wait_s)
    # 4. which size, or which limit, told in words
    if kind is _P.RATE_LIMIT:
        return _rate_or_size(status, f, markers, confidence)
    if (
        kind in (_P.INVALID_REQUEST, _P.REQUEST_TOO_LARGE)
        and f.message
        and _CONTEXT_OVERFLOW_RE.search(f.message)
    ):
        return _P.CONTEXT_OVERFLOW, [*markers, "message=context_overflow"], Confidence.LOW
    return kind, markers, confidence


def _kind(
    status: int | None, f: _Fields, wait_s: float | None
) -> tuple[ProviderErrorKind, list[str], Confidence]:
    """Rules 1 to 4 of the module docstring. ``wait_s``: the wait the provider stated, if any."""
    markers: list[str] = [] if status is None else [f"status={status}"]
    # 1. a specific body value
    if f.quota_kind is not None:
        window = "day" if f.quota_kind is _P.QUOTA_EXHAUSTED else "minute"
        return f.quota_kind, [*markers, f"body.details=quota_per_{window}"], Confidence.HIGH
    specific = _match(SPECIFIC_WORDS, f)
    if specific is not None and specific[0] in _FIRM:
        return specific[0], [*markers, specific[1]], Confidence.HIGH
    # 2. the status, or for an in-band error the HTTP status its body carries
    effective, label = status, "status"
    if (status is None or 200 <= status <= 299) and f.http_code is not None:
        effective, label = f.http_code, "body.code"
    by_status = _status_kind(effective)
    status_markers = markers if label == "status" else [*markers, f"{label}={effective}"]
    if specific is None and by_status is not None and by_status[0] is _P.QUOTA_EXHAUSTED:  # 402
        return by_status[0], status_markers, by_status[1]
    # 3. money, quota or plan-limit language: waiting does not help, whatever the status or code said
    money = _money_phrase(f.message) if f.message else None
    if money is not None and money.limit:
        # A limit on use that resets within a minute, by its words or by the wait the provider stated
        # (Gemini's per-minute "exceeded your current quota" with a RetryInfo of seconds), is a rate limit.
        short = "message=" + SHORT_WINDOW.name if SHORT_WINDOW.pattern.search(f.message) else None
        if short is None and wait_s is not None and wait_s <= LONGEST_AUTOMATIC_WAIT_S:
            short = "stated_wait=short"
        if short is not None:
            if specific is not None:
                return specific[0], [*markers, specific[1]], Confidence.HIGH
            return _P.RATE_LIMIT, [*markers, short], Confidence.LOW
    if money is not None:
        return _P.QUOTA_EXHAUSTED, [*markers, f"message=money:{money.name}"], Confidence.LOW
    if specific is not None:
        return specific[0], [*markers, specific[1]], Confidence.HIGH
    if by_status is not None:
        return by_status[0], status_markers, by_status[1]
    # 4. a generic body value, when the status said nothing; then the message's words
    generic = _match(GENERIC_WORDS, f)
    if generic is not None:
        return generic[0], [*markers, generic[1]], Confidence.HIGH
    for name, pattern, kind in _WAIT_PHRASES:
        if f.message and pattern.search(f.message):
            return kind, [*markers, f"message={name}"], Confidence.LOW
    return _P.UNKNOWN, markers, Confidence.LOW


def _rate_or_size(
    status: int | None, f: _Fields, markers: list[str], confidence: Confidence
) -> tuple[ProviderErrorKind, list[str], Confidence]:
    """A rate limit, or a request too large for the limit's whole window (which waiting cannot fix)."""
    if status == 413:  # the status says "too large"; the rate-limit code only names the limit
        return _P.REQUEST_TOO_LARGE, markers, Confidence.HIGH
    numbers = _LIMIT_REQUESTED_RE.search(f.message) if f.message else None
    if numbers is not None:
        limit, requested = (int(n.replace(",", "")) for n in numbers.groups())
        if requested > limit:
            return _P.REQUEST_TOO_LARGE, [*markers, "message=requested_over_limit"], Confidence.MEDIUM
        return _P.RATE_LIMIT, markers, confidence  # it fits the window: waiting helps
    if f.message and _REQUEST_TOO_LARGE_RE.search(f.message):
        return _P.REQUEST_TOO_LARGE, [*markers, "message=request_too_large"], Confidence.LOW
    return _P.RATE_LIMIT, markers, confidence


def _build(
    status: int | None,
    headers: Mapping[str, str] | None,
    payload: object,
    extra: tuple[str, ...] = (),
) -> ProviderError:
    if status is not None and (type(status) is not int or not 100 <= status <= 599):
        status = None  # not an HTTP status: never let garbage decide (or reach a record)
    fields = _fields(payload)
    lowered = _lower_headers(headers)
    retry = _retry_after(lowered, None, RETRY_AFTER_CAP_S)
    retry_after_s: float | None = None
    wait_marker: str | None = None
    if retry is not None:
        retry_after_s, wait_marker = retry
    elif fields.retry_delay_s is not None:
        retry_after_s, wait_marker = min(fields.retry_delay_s, RETRY_AFTER_CAP_S), "body.retry_delay"
    elif (reset := _exhausted_reset(lowered, time.time())) is not None:
        retry_after_s, wait_marker = min(reset[0], RETRY_AFTER_CAP_S), reset[1]
    elif (said := _retry_in(fields.message)) is not None:
        retry_after_s, wait_marker = min(said, RETRY_AFTER_CAP_S), "message=retry_in"
    kind, markers, confidence = _decide(status, fields, retry_after_s)
    if wait_marker is not None:
        markers.append(wait_marker)
    if kind is _P.RATE_LIMIT and retry_after_s is None and PLAN_WINDOW.pattern.search(fields.message):
        kind, confidence = _P.QUOTA_EXHAUSTED, Confidence.LOW
        markers.append(f"message=money:{PLAN_WINDOW.name}")
    should_retry: bool | None = None
    flag = lowered.get("x-should-retry", "").lower()
    if flag in ("true", "false"):
        should_retry = flag == "true"
        markers.append(f"header=x-should-retry:{flag}")
    return ProviderError(
        kind=kind,
        status=status,
        type=fields.type or fields.status_name,
        code=fields.code,
        retry_after_s=retry_after_s,
        should_retry=should_retry,
        markers=tuple(dict.fromkeys([*extra, *markers])),
        confidence=confidence,
    )


def provider_error_from_http(
    status: int,
    headers: Mapping[str, str] | None,
    body: bytes | str | Mapping[str, object] | None,
) -> ProviderError:
    """Classify an HTTP error response. ``body`` may be raw bytes (parsed as JSON, at most 64 KiB), text, an
    already decoded mapping, or anything else (ignored)."""
    return _build(status, headers, _parse_body(body))


def provider_error_from_document(
    payload: object, marker: str = "body=not_event_stream"
) -> ProviderError | None:
    """The error a 2xx body that is one JSON document names, or None when it is not an error (a whole
    completion, anything else). An error is an ``error`` object (OpenAI, Gemini, also in a one-element list)
    or ``{"type": "error", ...}`` (Anthropic, Responses); the 2xx status says nothing, so the body decides,
    marked with ``marker``: ``body=not_event_stream`` where a stream was expected, ``body=whole_answer`` for
    a non-streaming call's answer."""
    first = payload[0] if isinstance(payload, list) and payload else payload
    if not isinstance(first, Mapping):
        return None
    if first.get("type") != "error" and not isinstance(first.get("error"), (Mapping, str)):
        return None
    return _build(None, None, first, (marker,))


def provider_error_from_event(payload: Mapping[str, object]) -> ProviderError:
    """Classify an in-band error event (a decoded SSE ``data`` object) from any supported provider."""
    return _build(None, None, payload)


# How each SDK class is read, matched through the MRO (most derived first). A bare ``APIError`` is what
# openai raises for an in-band error event in a stream; connection errors are transport, not provider, facts.
_SDK_CLASSES: Final = {
    **{(sdk, "APIStatusError"): "status" for sdk in ("openai", "anthropic")},
    **{(sdk, "APIError"): "in_band" for sdk in ("openai", "anthropic")},
    **{
        (sdk, name): "skip"
        for sdk in ("openai", "anthropic")
        for name in ("APIConnectionError", "APIResponseValidationError")
    },
}


def _botocore_error(exc: BaseException) -> ProviderError | None:
    """botocore's ``ClientError``: its ``response`` holds the error's code and message, and the HTTP status
    (none for an exception message inside a stream: ``EventStreamError``)."""
    response = getattr(exc, "response", None)
    error = response.get("Error") if isinstance(response, Mapping) else None
    if not isinstance(error, Mapping):
        return None
    meta = response.get("ResponseMetadata") if isinstance(response, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    status, headers = meta.get("HTTPStatusCode"), meta.get("HTTPHeaders")
    payload = {"error": {"type": error.get("Code"), "message": error.get("Message")}}
    return _build(
        status if type(status) is int and status >= 400 else None,
        headers if isinstance(headers, Mapping) else None,
        payload,
        ("sdk=botocore",),
    )


def provider_error_from_sdk(exc: BaseException) -> ProviderError | None:
    """Classify an ``openai``/``anthropic`` ``APIStatusError``, the bare ``APIError`` openai raises for an
    in-band error event (matched by name), or botocore's ``ClientError``; None for anything else, connection
    errors included.

    The body decides over the status: an Anthropic in-band ``event: error`` arrives with ``status_code=200``.
    """
    if any(k.__name__ == "ClientError" and k.__module__ == "botocore.exceptions" for k in type(exc).__mro__):
        return _botocore_error(exc)
    sdk, how = "", "skip"
    for klass in type(exc).__mro__:
        top = str(getattr(klass, "__module__", "") or "").partition(".")[0]
        found = _SDK_CLASSES.get((top, klass.__qualname__))
        if found is not None:
            sdk, how = top, found
            break
    if how == "skip":
        return None
    try:
        status = getattr(exc, "status_code", None) if how == "status" else None
        body = getattr(exc, "body", None)
        headers = getattr(getattr(exc, "response", None), "headers", None)
        attrs = {k: getattr(exc, k, None) for k in ("type", "code")}
    except Exception:
        status, body, headers, attrs = None, None, None, {}
    payload = _parse_body(body)
    if _error_object(payload) is None:
        if how == "in_band":
            return None  # an APIError with no error body says nothing about the provider
        payload = {k: v for k, v in attrs.items() if isinstance(v, str)}  # the SDK's parsed attributes
        if isinstance(body, str):  # openai unwraps {"error": "text"} to the text: read it as the message
            payload["message"] = body[:_MAX_MESSAGE]
    return _build(
        status if type(status) is int else None,
        headers if isinstance(headers, Mapping) else None,
        payload,
        (f"sdk={sdk}",),
    )
