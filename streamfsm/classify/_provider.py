"""A provider's error (HTTP status, headers, body, or an in-band error event) becomes a ``ProviderError``.

The error is read as evidence and weighed in one ordered table, ``EVIDENCE``: each row reads one kind of
evidence (Gemini's quota details, a code's words, a window, words in the message, the status), says what it
decides and why it outranks the rows below, and the first row that reads something decides; its markers are
the evidence that decided, ``row=<name>`` names the row, and its confidence is that evidence's (a code or a
status: high; words in the message: low). The order, in short: what the body says beats the status; money
decides under any status; a time window decides between transient and not (per second or minute: a rate limit;
per hour, day or month: spent, unless the provider states a wait past an automatic retry, which the verdict
then asks about); words that say the model cannot be served (no channel, route or deployment for it, not
loaded, more memory than the server has, not found) are never transient; a cancelled operation is; a status
that names a kind (401, 403, 404, 413, 429, 529) outweighs the words "cancelled" and a per-minute window, one
that names none (400, 422, 499, 5xx) does not. Then ``_refine_size`` tells which size: a rate limit the
request alone exceeds is ``request_too_large`` (a 413, "Limit N, Requested M" with M > N), an invalid request
that speaks of the context window is ``context_overflow``.

Codes, types and statuses are read as **words** (``code_words``: split on ``_``, ``-``, ``.``, spaces and
camel case, case-folded), so ``too_many_requests``, ``RESOURCE_EXHAUSTED`` and ``TooManyRequests`` meet in
one rule; the rules come in groups (``MONEY_WORDS``, ``MUST_CHANGE_WORDS``, ``LIMIT_WORDS``,
``TRANSIENT_WORDS``, ``GENERIC_WORDS``), each read by its row, with a source per rule. Messages are read
through named phrases (``MONEY_PHRASES``, ``RESOURCE_PHRASES``, ``SHORT_WINDOW``, ``LONG_WINDOW``,
``CANCELLED``); only a phrase's name reaches the markers.

The wait (``retry_after_s``): ``retry-after-ms`` / ``retry-after``, else Gemini's ``RetryInfo``, else the
reset of a rate limit whose remaining count is 0 (``x-ratelimit-reset-*``, ``anthropic-ratelimit-*-reset``),
else a wait stated in the message ("Please try again in 9m38.016s", "resets in 5 hours"). Whether a wait that
long may be automatic is the verdict's business (``LONGEST_AUTOMATIC_WAIT_S``).

Wrappers read (``_error_chain``): an ``error`` object (OpenAI, Gemini, Anthropic's ``{"type": "error",
"error": {...}}``), one inside another (a gateway re-wrapping its upstream's), a list (Gemini's
``[{"error": ...}]``), a Responses ``response.error``, FastAPI's ``detail`` as text, object or list of
``{"msg": ...}`` (LiteLLM, vLLM), a string ``error`` (xAI, Ollama, proxies), or a flat object with only a
``message`` or ``code``; a field missing inside is read from the wrapper outside.

Nothing from the message is kept, and ``type``/``code`` are kept only when they look like identifiers with no
credential in them: a hostile or buggy body cannot smuggle text into records (a code matched but not fit to
keep is marked by the rule's words, ``body.code~rate_limit``).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Mapping
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
    499: _P.SERVER_ERROR,  # the request was cancelled (nginx, Gemini CANCELLED): the work may well finish
    500: _P.SERVER_ERROR,
    502: _P.SERVER_ERROR,
    503: _P.SERVER_ERROR,
    504: _P.SERVER_ERROR,
    529: _P.OVERLOADED,
}
_WEAK_STATUSES: Final = frozenset({408, 409, 499})


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
# ``QUOTA-INSUFFICIENT`` meet. Each group is read by its row of ``EVIDENCE``; within a group the first rule
# that matches wins.
CONCURRENCY_WORDS: Final = (
    # a concurrency reservation, not money: it frees itself
    _rule("in flight", _P.RATE_LIMIT, "OpenRouter 402 in_flight_budget_exhausted"),
)
# Money: no wait refills it, whatever the window.
MONEY_WORDS: Final = (
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
    _rule("payment", _P.QUOTA_EXHAUSTED, "OpenRouter, Mistral, Cohere 402 payment_required"),
    _rule(
        "budget",
        _P.QUOTA_EXHAUSTED,
        "LiteLLM proxy budget_exceeded, OpenRouter 402 weight_exceeds_budget",
        NOT_MONEY_BUDGETS,
    ),
    _rule("arrearage", _P.QUOTA_EXHAUSTED, "Alibaba Model Studio (Qwen) code Arrearage"),
)
# What the request (or where it is sent) must change: no wait and no other wording cures these.
MUST_CHANGE_WORDS: Final = (
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
    # the model cannot be served where the request went
    _rule("not loaded", _P.MODEL_UNAVAILABLE, "local servers' model_not_loaded"),
    _rule("no channel", _P.MODEL_UNAVAILABLE, "one-api / new-api gateways' no_available_channel"),
    _rule("no route", _P.MODEL_UNAVAILABLE, "gateways' no_route_for_model"),
    _rule("no deployment", _P.MODEL_UNAVAILABLE, "routers' no_deployment_available"),
    _rule("no endpoint", _P.MODEL_UNAVAILABLE, "gateways' no_endpoint_available"),
    _rule("memory", _P.MODEL_UNAVAILABLE, "servers' out_of_memory, insufficient_memory, OutOfMemoryError"),
    _rule("oom", _P.MODEL_UNAVAILABLE, "GPU servers' OOM"),
    _rule("vram", _P.MODEL_UNAVAILABLE, "GPU servers' insufficient_vram"),
    _rule("not found", _P.NOT_FOUND, "Anthropic not_found_error, Gemini NOT_FOUND, OpenAI model_not_found"),
    _rule("not exist", _P.NOT_FOUND, "gateways' model_not_exist"),
    _rule("service blocked", _P.PERMISSION, "Gemini ErrorInfo API_KEY_SERVICE_BLOCKED"),
    _rule("invalid api key", _P.AUTH, "OpenAI invalid_api_key, Gemini ErrorInfo API_KEY_INVALID"),
    _rule("authentication", _P.AUTH, "Anthropic 401 authentication_error"),
    _rule("unauthenticated", _P.AUTH, "Gemini UNAUTHENTICATED"),
)
# Limits on use: the window decides (per second or minute: a rate limit; otherwise spent until it resets).
LIMIT_WORDS: Final = (
    # not a rate quota: Alibaba Model Studio's 429 Throttling.RateQuota lifts by itself
    _rule(
        "quota",
        _P.QUOTA_EXHAUSTED,
        "OpenAI 429 insufficient_quota, Moonshot exceeded_current_quota_error",
        ("rate",),
    ),
    _rule("usage limit", _P.QUOTA_EXHAUSTED, "OpenAI 429 organization_usage_limit_exceeded"),
)
# What a wait cures, and the kinds a status may only confirm.
TRANSIENT_WORDS: Final = (
    _rule("permission", _P.PERMISSION, "Anthropic permission_error, Gemini PERMISSION_DENIED"),
    _rule("unsupported country", _P.PERMISSION, "OpenAI unsupported_country_region_territory"),
    _rule("overloaded", _P.OVERLOADED, "Anthropic 529 overloaded_error, OpenAI server_is_overloaded"),
    _rule("unavailable", _P.OVERLOADED, "Gemini 503 UNAVAILABLE (the model is overloaded)"),
    _rule("rate limit", _P.RATE_LIMIT, "OpenAI, Groq rate_limit_exceeded; Anthropic, xAI rate_limit_error"),
    _rule("ratelimit", _P.RATE_LIMIT, "one-word spellings (RatelimitExceeded)"),
    _rule("too many requests", _P.RATE_LIMIT, "OpenAI Responses too_many_requests, HTTP 429's reason phrase"),
    _rule("resource exhausted", _P.RATE_LIMIT, "Gemini, Vertex AI 429 RESOURCE_EXHAUSTED"),
    _rule("throttling", _P.RATE_LIMIT, "Amazon Bedrock ThrottlingException"),
    _rule("throttled", _P.RATE_LIMIT, "gateways' throttled"),
    _rule("cancelled", _P.SERVER_ERROR, "Gemini 499 CANCELLED (the operation was cancelled)"),
    _rule("canceled", _P.SERVER_ERROR, "gateways' request_canceled"),
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
# Time windows. A limit per second or minute is a rate limit, whatever it is called (a wait cures it); one per
# hour, day, week or month is spent until a reset no automatic retry sits out.
SHORT_WINDOW: Final = _phrase(
    "short_window",
    r"\bper[- ]?(?:minute|min|second|sec)\b|\b(?:this|a|one) (?:minute|second)\b|\b(?:rpm|tpm|rps|tps)\b"
    r"|/ ?(?:minute|min|second|sec)\b|每分钟|每秒",
    "OpenAI, Groq 'tokens per min (TPM)', gateways' 'requests per minute' quotas and usage limits",
)
LONG_WINDOW: Final = _phrase(
    "plan_window",
    r"\bper[- ](?:hour|day|week|month)\b|/ ?(?:hour|day|week|month)\b|\b(?:rpd|tpd)\b"
    r"|\b(?:hourly|daily|weekly|monthly) (?:limit|quota|cap|allowance|rate limit)|每天|每日|每月",
    "Groq, OpenAI 'tokens per day (TPD)', OpenRouter in-band 429 'free-models-per-day', Cohere 429 trial key"
    " '1000 API calls / month'",
)
SHORT_WINDOW_WORDS: Final = frozenset({"minute", "min", "second", "sec", "rpm", "tpm", "rps", "tps"})
LONG_WINDOW_WORDS: Final = frozenset(
    {"hour", "hourly", "day", "daily", "week", "weekly", "month", "monthly", "rpd", "tpd"}
)
# A limit named in words, for a window to apply to.
_LIMIT_RE: Final = re.compile(
    r"\blimit|\bquota|too many requests|\bexceeded\b|\bexhausted\b|限额|配额|上限", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class ResourcePhrase:
    """Words that say the model cannot be served where the request went; ``name`` goes into the markers."""

    name: str
    kind: ProviderErrorKind
    pattern: re.Pattern[str]
    source: str


def _resource(name: str, kind: ProviderErrorKind, pattern: str, source: str) -> ResourcePhrase:
    return ResourcePhrase(name, kind, re.compile(pattern, re.IGNORECASE), source)


# what serves a model: an outage of a server or upstream ("no healthy upstream") is not about the model
_SERVED: Final = r"(?:channel|route|deployment|endpoint|provider)s?"
RESOURCE_PHRASES: Final = (
    _resource(
        "no_route",
        _P.MODEL_UNAVAILABLE,
        rf"(?s)^(?=.*\bmodels?\b).*?\bno (?:available |healthy |active |suitable |enabled )?{_SERVED}"
        r" (?:is |are )?(?:available|found|configured|for|that|supports?|can)\b"
        r"|无可用(?:渠道|通道|路由)|没有可用的?(?:渠道|通道)",
        "one-api / new-api 503 'no available channel for model', routers' 'No deployments available for"
        " selected model', gateways' 'no route for model'",
    ),
    _resource(
        "not_loaded",
        _P.MODEL_UNAVAILABLE,
        r"\bmodels?\b.{0,80}?\bnot (?:been |yet )?loaded\b"
        r"|\bno models? (?:is |are )?(?:currently )?loaded\b",
        "LM Studio 'No models loaded', local servers' 'model not loaded'",
    ),
    _resource(
        "memory",
        _P.MODEL_UNAVAILABLE,
        r"\b(?:more|enough|sufficient|insufficient) (?:system |gpu |video |available |free |device )?"
        r"(?:memory|vram|ram)\b|\bout of (?:gpu |cuda |device |video )?memory\b|\bOOM\b|显存不足|内存不足",
        "Ollama 500 'model requires more system memory than is available', vLLM, llama.cpp 'CUDA out of"
        " memory'",
    ),
    _resource(
        "model_not_found",
        _P.NOT_FOUND,
        r"\bmodels?\b.{0,80}?\b(?:not found|does not exist|doesn't exist|not exist)\b"
        r"|\bunknown model\b|\bno such model\b|模型不存在",
        "Ollama 404 \"model 'x' not found, try pulling it first\", vLLM 'The model `x` does not exist'",
    ),
)
# A cancelled operation: the work stopped, and the same request sent again may well finish.
CANCELLED: Final = _phrase(
    "cancelled",
    r"\bcancell?ed\b|\bcontext cancell?ed\b|\bcancellation\b",
    "Gemini 499 CANCELLED 'The operation was cancelled', Go servers' 'context canceled', nginx 499",
)
# ... but a subscription, account, plan or key that was cancelled is money or credentials, not the work.
_CANCELLED_NOT_WORK_RE: Final = re.compile(
    r"\b(?:subscription|account|plan|membership|key|order|billing)\b[^.]{0,40}?\bcancell?ed\b", re.IGNORECASE
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


_MAX_DEPTH: Final = 4
# Where a wrapper keeps the error's words: OpenAI and Gemini ``message``, FastAPI validation items ``msg``,
# a string ``error`` (xAI, Ollama, proxies) or ``detail`` (FastAPI, LiteLLM, vLLM), Baidu-style ``error_msg``.
_MESSAGE_KEYS: Final = ("message", "msg", "error", "detail", "error_msg")
_ERROR_KEYS: Final = frozenset({"code", "type", "status", "message", "error", "detail", "msg", "error_msg"})


def _error_chain(payload: object) -> tuple[Mapping[object, object], ...]:
    """The mappings that describe the error, outermost first: the payload and each wrapper inside it (an
    ``error`` object or list, a Responses ``response.error``, FastAPI's ``detail`` object or list, the first
    element of a list: Gemini's ``[{"error": ...}]``), at most ``_MAX_DEPTH`` deep. Empty when nothing in it
    has an error's shape."""
    chain: list[Mapping[object, object]] = []
    node = payload
    for _ in range(2 * _MAX_DEPTH):
        if isinstance(node, (list, tuple)):
            node = node[0] if node else None
            continue
        if not isinstance(node, Mapping) or len(chain) == _MAX_DEPTH:
            break
        chain.append(node)
        response = node.get("response")
        nested = (node.get("error"), response.get("error") if isinstance(response, Mapping) else None)
        inner = next(
            (v for v in (*nested, node.get("detail")) if isinstance(v, (Mapping, list, tuple))), None
        )
        if inner is None:
            break
        node = inner
    if not any(_ERROR_KEYS.intersection(m) for m in chain):
        return ()
    return tuple(chain)


def _error_object(payload: object) -> Mapping[object, object] | None:
    """The innermost mapping that describes the error, or None when the payload has no error's shape."""
    chain = _error_chain(payload)
    return chain[-1] if chain else None


def _inner(chain: tuple[Mapping[object, object], ...], key: str) -> object:
    """``key``'s value in the innermost wrapper that sends one (a field missing inside is read outside)."""
    return next((m[key] for m in reversed(chain) if m.get(key) is not None), None)


def _error_type(chain: tuple[Mapping[object, object], ...]) -> object:
    """The error's type. The outermost mapping's ``type`` may be its event's name (``"error"``,
    ``response.failed``), which is not the error's type."""
    for depth, m in reversed(list(enumerate(chain))):
        value = m.get("type")
        if depth == 0 and (value == "error" or (isinstance(value, str) and "." in value)):
            return None
        if value is not None:
            return value
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
    quota_window: str | None = None  # the window of the quota Gemini's QuotaFailure says was hit
    retry_delay_s: float | None = None
    message: str = ""
    said: tuple[tuple[str, str], ...] = ()  # (label, value as sent): code, type and status, read as words


def _quota_window(violations: object) -> str | None:
    """The window of the quota Gemini's ``QuotaFailure`` says was hit (``day``, ``minute``, ...), from its
    ids (``GenerateRequestsPerDayPerProjectPerModel``); None when they name none. A long window anywhere
    wins: waiting a minute does not lift it."""
    window: str | None = None
    for v in violations[:_MAX_DETAILS] if isinstance(violations, (list, tuple)) else ():
        quota_id = v.get("quotaId") if isinstance(v, Mapping) else None
        lowered = quota_id.lower() if isinstance(quota_id, str) else ""
        for unit in ("hour", "day", "week", "month"):
            if f"per{unit}" in lowered:
                return unit
        for unit in ("minute", "second"):
            if f"per{unit}" in lowered:
                window = unit
    return window


def _gemini_details(details: object) -> tuple[str | None, str | None, float | None]:
    reason: str | None = None
    window: str | None = None
    delay: float | None = None
    if not isinstance(details, (list, tuple)):
        return reason, window, delay
    for item in details[:_MAX_DETAILS]:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("@type")
        kind = kind if isinstance(kind, str) else ""
        if kind.endswith("ErrorInfo") and reason is None:
            reason = _token(item.get("reason"))
        elif kind.endswith("QuotaFailure") and window in (None, "minute", "second"):
            window = _quota_window(item.get("violations")) or window
        elif kind.endswith("RetryInfo"):
            text = item.get("retryDelay")
            m = _RETRY_DELAY_RE.fullmatch(text) if isinstance(text, str) else None
            if m is not None:
                delay = float(m.group(1))
    return reason, window, delay


def _http_code(value: object) -> int | None:
    """An HTTP status sent as the body's code, a number or a numeric string ("429")."""
    if isinstance(value, str) and len(value) == 3 and value.isascii() and value.isdigit():
        value = int(value)
    return value if type(value) is int and 100 <= value <= 599 else None


def _fields(payload: object) -> _Fields:
    chain = _error_chain(payload)
    if not chain:
        return _Fields()
    etype = _error_type(chain)
    raw_code = _inner(chain, "code")
    http_code = _http_code(raw_code)
    if http_code is None:  # an HTTP status sent as the body's status (gateways' {"status": 503, ...})
        http_code = _http_code(_inner(chain, "status")) or _http_code(_inner(chain, "status_code"))
    code = _token(raw_code)
    details = _inner(chain, "details")
    detail_code = details.get("error_code") if isinstance(details, Mapping) else None
    if isinstance(details, Mapping):  # Anthropic: {"error_code": ...}
        code = _token(detail_code) or code
    reason, window, delay = _gemini_details(details)
    # Every text the wrappers carry, innermost first: a gateway's "rate limit" message may sit beside a
    # detail that quotes the upstream's "insufficient balance", and the money words must be read.
    message = " | ".join(
        v[:_MAX_MESSAGE]
        for m in reversed(chain)
        for k in _MESSAGE_KEYS
        if isinstance(v := m.get(k), str) and v
    )
    status_name = _inner(chain, "status")
    sent_code = next((v for v in (reason, detail_code, raw_code) if isinstance(v, str)), None)
    said = tuple(
        (label, value[:_MAX_SAID])
        for label, value in (("body.code", sent_code), ("body.type", etype), ("body.status", status_name))
        if isinstance(value, str)
    )
    return _Fields(
        type=_token(etype),
        code=reason or code or (str(http_code) if http_code is not None else None),
        status_name=_token(status_name),
        http_code=http_code,
        quota_window=window,
        retry_delay_s=delay,
        message=message,  # each text bounded: a long inner one must not hide an outer one's words
        said=said,
    )


def code_words(value: str) -> frozenset[str]:
    """A provider's code or type as words: split on ``_``, ``-``, ``.``, spaces and camel case, case-folded.
    ``too_many_requests``, ``TooManyRequests`` and ``too-many requests`` give the same words."""
    return frozenset(word.casefold() for word in _WORD_RE.findall(value[:128]))


@dataclass(frozen=True, slots=True)
class _Match:
    kind: ProviderErrorKind
    marker: str  # the value as sent when it is fit to keep, else the rule's words
    words: frozenset[str]  # every word of the value that matched


def _match(rules: tuple[WordRule, ...], f: _Fields) -> _Match | None:
    """The first rule (in table order) whose words the body's code, type or status holds."""
    said = [(label, value, code_words(value)) for label, value in f.said]
    for rule in rules:
        for label, value, held in said:
            if held.issuperset(rule.words) and held.isdisjoint(rule.unless):
                kept = _token(value)
                return _Match(rule.kind, f"{label}={kept}" if kept == value else f"{label}~{rule.name}", held)
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


# -- the decision: one ordered table of evidence ------------------------------------------------------------

# Statuses that name a kind; every other error status only says "the client's" or "the server's" fault, and
# words that say which outweigh it.
NAMED_STATUSES: Final = frozenset({401, 402, 403, 404, 413, 429, 529})
_LIMIT_CODE_WORDS: Final = frozenset({"limit", "limits", "quota", "exceeded", "exhausted"})


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


@dataclass(frozen=True, slots=True)
class Evidence:
    """What one provider error says, gathered once; each row of ``EVIDENCE`` reads it."""

    fields: _Fields
    status: int | None  # the HTTP status; None for an in-band error or a 2xx document
    effective: int | None  # the status, or the HTTP status the body carries where the response's says none
    status_markers: tuple[str, ...]  # what ``effective`` came from, when it is the body's
    wait_s: float | None  # the wait the provider stated (headers, RetryInfo, a reset, words)
    window: str | None  # "short" (per second or minute) or "long" (per hour, day, week or month)
    window_marker: str | None  # where the window was said
    limit: bool  # a limit on use is named (a limit or rate code, a 429, or a limit in words)

    @property
    def by_status(self) -> tuple[ProviderErrorKind, Confidence] | None:
        return _status_kind(self.effective)

    @property
    def status_is_named(self) -> bool:
        return self.effective in NAMED_STATUSES

    def agrees(self, kind: ProviderErrorKind) -> bool:
        """The status alone says ``kind``: then it decides, as the stronger of the two."""
        by_status = self.by_status
        return by_status is not None and by_status[0] is kind


@dataclass(frozen=True, slots=True)
class Reading:
    """What a row decided: the kind, the evidence markers that decided it, and how sure it is."""

    kind: ProviderErrorKind
    markers: tuple[str, ...]
    confidence: Confidence


@dataclass(frozen=True, slots=True)
class EvidenceRow:
    """One row of the evidence table: what it reads, what it decides, and why it outranks the rows below."""

    name: str
    reads: str
    decides: str
    why: str
    read: Callable[[Evidence], Reading | None]


def _window(f: _Fields) -> tuple[str | None, str | None]:
    """The window a limit is counted over, and where it was said: Gemini's details, then the words of a code
    (``tokens_per_day``, ``TokensPerMinQuotaExceeded``), then the message. Long beats short in each."""
    if f.quota_window is not None:
        long = f.quota_window in ("hour", "day", "week", "month")
        return "long" if long else "short", f"body.details=quota_per_{f.quota_window}"
    for window, words in (("long", LONG_WINDOW_WORDS), ("short", SHORT_WINDOW_WORDS)):
        for label, value in f.said:
            if code_words(value) & words:
                kept = _token(value)
                return window, f"{label}={kept}" if kept == value else f"{label}~{window}_window"
    if f.message and LONG_WINDOW.pattern.search(f.message):
        return "long", "message=long_window"
    if f.message and SHORT_WINDOW.pattern.search(f.message):
        return "short", "message=short_window"
    return None, None


def _evidence(status: int | None, f: _Fields, wait_s: float | None) -> Evidence:
    effective = status
    status_markers: tuple[str, ...] = ()
    if (status is None or 200 <= status <= 299) and f.http_code is not None:
        effective, status_markers = f.http_code, (f"body.code={f.http_code}",)
    window, window_marker = _window(f)
    limit_code = _match(LIMIT_WORDS, f)
    rate_code = _match(TRANSIENT_WORDS, f)
    limit = (
        limit_code is not None
        or (rate_code is not None and rate_code.kind is _P.RATE_LIMIT)
        or any(code_words(value) & _LIMIT_CODE_WORDS for _, value in f.said)
        or effective == 429
        or bool(f.message and _LIMIT_RE.search(f.message))
    )
    return Evidence(f, status, effective, status_markers, wait_s, window, window_marker, limit)


def _high(found: _Match | None) -> Reading | None:
    return None if found is None else Reading(found.kind, (found.marker,), Confidence.HIGH)


def _read_details(e: Evidence) -> Reading | None:
    if e.fields.quota_window is None or e.window_marker is None:
        return None
    kind = _P.QUOTA_EXHAUSTED if e.window == "long" else _P.RATE_LIMIT
    return Reading(kind, (e.window_marker,), Confidence.HIGH)


def _read_payment_status(e: Evidence) -> Reading | None:
    if e.effective != 402 or _match(LIMIT_WORDS + TRANSIENT_WORDS, e.fields) is not None:
        return None
    return Reading(_P.QUOTA_EXHAUSTED, e.status_markers, Confidence.HIGH)


def _read_money_message(e: Evidence) -> Reading | None:
    money = _money_phrase(e.fields.message) if e.fields.message else None
    if money is None or money.limit:
        return None
    return Reading(_P.QUOTA_EXHAUSTED, (f"message=money:{money.name}",), Confidence.LOW)


def _read_long_window(e: Evidence) -> Reading | None:
    if e.window != "long" or not e.limit or e.window_marker is None:
        return None
    confidence = Confidence.LOW if e.window_marker.startswith("message=") else Confidence.HIGH
    if e.wait_s is not None and e.wait_s > LONGEST_AUTOMATIC_WAIT_S:
        # the provider said when it lifts, and it is past an automatic wait: kept, and the verdict asks
        return Reading(_P.RATE_LIMIT, (e.window_marker,), confidence)
    marker = (
        f"message=money:{LONG_WINDOW.name}" if e.window_marker.startswith("message=") else e.window_marker
    )
    return Reading(_P.QUOTA_EXHAUSTED, (marker,), confidence)


def _read_limit_code(e: Evidence) -> Reading | None:
    found = _match(LIMIT_WORDS, e.fields)
    if found is None:
        return None
    if e.window == "short" and e.window_marker is not None:
        return Reading(_P.RATE_LIMIT, tuple(dict.fromkeys((found.marker, e.window_marker))), Confidence.HIGH)
    return Reading(found.kind, (found.marker,), Confidence.HIGH)


def _read_limit_message(e: Evidence) -> Reading | None:
    money = _money_phrase(e.fields.message) if e.fields.message else None
    if money is None or not money.limit:
        return None
    short: str | None = None
    if e.window == "short":
        short = e.window_marker
    elif e.wait_s is not None and e.wait_s <= LONGEST_AUTOMATIC_WAIT_S:
        short = "stated_wait=short"  # Gemini's per-minute quota with a RetryInfo of seconds
    if short is None:
        return Reading(_P.QUOTA_EXHAUSTED, (f"message=money:{money.name}",), Confidence.LOW)
    return _high(_match(TRANSIENT_WORDS, e.fields)) or Reading(_P.RATE_LIMIT, (short,), Confidence.LOW)


def _read_resource_message(e: Evidence) -> Reading | None:
    if not e.fields.message or e.wait_s is not None:
        return None  # a stated wait is a router's cooldown: it lifts by itself
    found = next((p for p in RESOURCE_PHRASES if p.pattern.search(e.fields.message)), None)
    if found is None or e.agrees(found.kind):
        return None
    return Reading(found.kind, (f"message=resource:{found.name}",), Confidence.LOW)


def _read_cancelled(e: Evidence) -> Reading | None:
    message = e.fields.message
    if e.status_is_named or e.agrees(_P.SERVER_ERROR) or not message:
        return None
    if not CANCELLED.pattern.search(message) or _CANCELLED_NOT_WORK_RE.search(message):
        return None
    return Reading(_P.SERVER_ERROR, (f"message={CANCELLED.name}",), Confidence.LOW)


def _read_short_window(e: Evidence) -> Reading | None:
    if e.window != "short" or not e.limit or e.status_is_named or e.window_marker is None:
        return None
    said = e.window_marker.startswith("message=")
    return Reading(_P.RATE_LIMIT, (e.window_marker,), Confidence.LOW if said else Confidence.HIGH)


def _read_status(e: Evidence) -> Reading | None:
    by_status = e.by_status
    return None if by_status is None else Reading(by_status[0], e.status_markers, by_status[1])


def _read_wait_words(e: Evidence) -> Reading | None:
    for name, pattern, kind in _WAIT_PHRASES:
        if e.fields.message and pattern.search(e.fields.message):
            return Reading(kind, (f"message={name}",), Confidence.LOW)
    return None


EVIDENCE: Final = (
    EvidenceRow(
        "quota_details",
        "Gemini's QuotaFailure details: the id of the quota that was hit (…PerDay…, …PerMinute…)",
        "per hour, day, week or month: quota_exhausted; per minute or second: rate_limit",
        "the provider's own structured account of which limit was hit: no wording or status is more exact",
        _read_details,
    ),
    EvidenceRow(
        "concurrency_code",
        "a code naming requests in flight",
        "rate_limit",
        "a concurrency reservation frees itself, whatever money word its code holds (in_flight_budget)",
        lambda e: _high(_match(CONCURRENCY_WORDS, e.fields)),
    ),
    EvidenceRow(
        "money_code",
        "a code, type or status naming money: billing, credit, balance, payment, spend limit, budget",
        "quota_exhausted",
        "no wait refills money, whatever the status or window says",
        lambda e: _high(_match(MONEY_WORDS, e.fields)),
    ),
    EvidenceRow(
        "must_change_code",
        "a code, type or status naming what must change: context length, too large, content filter, the"
        " model not found, not loaded, no route or not enough memory for it, credentials",
        "context_overflow, request_too_large, content_filter, not_found, model_unavailable, auth, permission",
        "the same request fails the same way however long one waits; a status (a 503 or a 429 from a"
        " gateway) only says the request failed",
        lambda e: _high(_match(MUST_CHANGE_WORDS, e.fields)),
    ),
    EvidenceRow(
        "payment_status",
        "HTTP 402 (or 402 as the body's code) with no limit or rate code",
        "quota_exhausted",
        "Payment Required names money as plainly as a code does",
        _read_payment_status,
    ),
    EvidenceRow(
        "money_message",
        "money language in the message (MONEY_PHRASES not about limits: balance, credits, billing, spend"
        " limit, payment, budget, arrears)",
        "quota_exhausted (low confidence)",
        "money decides under any status, over a rate-limit or overload code: no wait refills it",
        _read_money_message,
    ),
    EvidenceRow(
        "long_window",
        "a limit (a limit or rate code, a 429, or a limit in words) counted per hour, day, week or month, in"
        " a code's words or the message",
        "quota_exhausted; rate_limit only when the provider states a wait longer than an automatic retry"
        " waits (then the verdict asks)",
        "the window says when the limit lifts, and it is past any automatic retry; a short retry-after on a"
        " daily limit is a proxy's default, not the reset",
        _read_long_window,
    ),
    EvidenceRow(
        "limit_code",
        "a code naming a quota or usage limit (insufficient_quota, quota_exceeded, usage_limit_exceeded)",
        "rate_limit when a code's words or the message count it per second or minute; else quota_exhausted",
        "a quota counted per minute lifts by itself; one with no window (OpenAI's insufficient_quota) does"
        " not, even beside a retry-after",
        _read_limit_code,
    ),
    EvidenceRow(
        "limit_message",
        "quota, usage or plan-limit language in the message (MONEY_PHRASES about limits)",
        "rate_limit when the message counts it per second or minute or the provider states a wait an"
        " automatic retry sits out (a rate or overload code keeps its kind); else quota_exhausted (low"
        " confidence)",
        "a limit with no short window is spent until a reset nobody stated",
        _read_limit_message,
    ),
    EvidenceRow(
        "resource_message",
        "words saying the model cannot be served (RESOURCE_PHRASES: no channel, route or deployment for it;"
        " not loaded; more memory than the server has; model not found or does not exist), with no stated"
        " wait",
        "model_unavailable, or not_found (low confidence)",
        "no wait brings a route, a loaded model or memory, whatever the status (a 500 or 503 only says the"
        " server failed); a stated wait is a router's cooldown, and the rows below decide",
        _read_resource_message,
    ),
    EvidenceRow(
        "transient_code",
        "a code, type or status naming a rate limit, overload, unavailability, a cancelled operation or a"
        " permission",
        "rate_limit, overloaded, server_error, permission",
        "the body names the kind; the status only confirms it",
        lambda e: _high(_match(TRANSIENT_WORDS, e.fields)),
    ),
    EvidenceRow(
        "cancelled",
        "'cancelled', 'canceled' or 'context canceled' in the message (not a subscription, account or key"
        " cancelled), where the status names no kind",
        "server_error (transient, low confidence)",
        "the work stopped before it finished, so the same request may well finish; a 400 or 499 only says"
        " the request ended early",
        _read_cancelled,
    ),
    EvidenceRow(
        "short_window",
        "a limit counted per second or minute, in a code's words or the message, where the status names no"
        " kind",
        "rate_limit (low confidence when only the message says it)",
        "a limit per minute lifts within a minute, whatever a 400 or a 500 says",
        _read_short_window,
    ),
    EvidenceRow(
        "status",
        "the HTTP status, or for an in-band error or a 2xx document the HTTP status the body carries as"
        " its code (401 auth, 429 rate limit, 499 and 5xx server error, 529 overloaded, other 4xx invalid)",
        "the status's kind",
        "nothing above spoke; a status of 200 says nothing (Anthropic's in-band error arrives as one)",
        _read_status,
    ),
    EvidenceRow(
        "generic_code",
        "a broad code or type (invalid_request_error, api_error, INVALID_ARGUMENT, ...)",
        "the code's kind",
        "only when no status said anything",
        lambda e: _high(_match(GENERIC_WORDS, e.fields)),
    ),
    EvidenceRow(
        "wait_words",
        "'rate limit', 'too many requests', 'overloaded' or 'server busy' in the message",
        "rate_limit, overloaded (low confidence)",
        "the last words left when nothing else named the kind",
        _read_wait_words,
    ),
    EvidenceRow(
        "nothing",
        "nothing readable",
        "unknown (low confidence: never an automatic retry)",
        "an error nobody can read is never called transient",
        lambda e: Reading(_P.UNKNOWN, (), Confidence.LOW),
    ),
)


def _refine_size(e: Evidence, reading: Reading) -> Reading:
    """Which size, told in words: a rate limit the request alone exceeds can never succeed by waiting (413,
    or "Limit N, Requested M" with M > N, or "request too large"); an invalid or too-large request that
    speaks of the context window is a context overflow."""
    f, kind, markers = e.fields, reading.kind, reading.markers
    if kind is _P.RATE_LIMIT:
        if e.status == 413:  # the status says "too large"; the rate-limit code only names the limit
            return Reading(_P.REQUEST_TOO_LARGE, markers, Confidence.HIGH)
        numbers = _LIMIT_REQUESTED_RE.search(f.message) if f.message else None
        if numbers is not None:
            limit, requested = (int(n.replace(",", "")) for n in numbers.groups())
            if requested > limit:
                return Reading(
                    _P.REQUEST_TOO_LARGE, (*markers, "message=requested_over_limit"), Confidence.MEDIUM
                )
            return reading  # it fits the window: waiting helps
        if f.message and _REQUEST_TOO_LARGE_RE.search(f.message):
            return Reading(_P.REQUEST_TOO_LARGE, (*markers, "message=request_too_large"), Confidence.LOW)
    elif (
        kind in (_P.INVALID_REQUEST, _P.REQUEST_TOO_LARGE)
        and f.message
        and _CONTEXT_OVERFLOW_RE.search(f.message)
    ):
        return Reading(_P.CONTEXT_OVERFLOW, (*markers, "message=context_overflow"), Confidence.LOW)
    return reading


def decide(e: Evidence) -> tuple[EvidenceRow, Reading]:
    """The first row of ``EVIDENCE`` that reads something decides (the last one always does)."""
    for row in EVIDENCE:
        reading = row.read(e)
        if reading is not None:
            return row, _refine_size(e, reading)
    raise AssertionError("the evidence table ends in a row that always decides")


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
    row, reading = decide(_evidence(status, fields, retry_after_s))
    markers = [] if status is None else [f"status={status}"]
    markers += [*reading.markers, f"row={row.name}"]
    if wait_marker is not None:
        markers.append(wait_marker)
    should_retry: bool | None = None
    flag = lowered.get("x-should-retry", "").lower()
    if flag in ("true", "false"):
        should_retry = flag == "true"
        markers.append(f"header=x-should-retry:{flag}")
    return ProviderError(
        kind=reading.kind,
        status=status,
        type=fields.type or fields.status_name,
        code=fields.code,
        retry_after_s=retry_after_s,
        should_retry=should_retry,
        markers=tuple(dict.fromkeys([*extra, *markers])),
        confidence=reading.confidence,
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
