"""A provider's error (HTTP status, headers, body, or an in-band error event) becomes a ``ProviderError``.

Evidence is weighed in a fixed order, and the markers say which piece decided:

1. A specific body value: an OpenAI ``code`` (``context_length_exceeded``, ``insufficient_quota``, …), an
   Anthropic ``error.details.error_code`` or ``error.type`` (``overloaded_error``, …), Gemini ``details``
   (``API_KEY_INVALID``, a per-day quota) or ``status`` (``RESOURCE_EXHAUSTED``, …).
2. The HTTP status (``401`` auth, ``429`` rate limit, ``529`` overloaded, …). A status of 200 says nothing: an
   Anthropic in-band ``event: error`` reaches the SDK as ``APIStatusError(status_code=200)``.
3. A generic body value (``invalid_request_error``, ``api_error``, ``INVALID_ARGUMENT``, …).
4. The message, only to tell which size or which limit, and recorded in the markers:

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
   that no wait can cure, a size error that is really the context window), so the kind is decided from all
   of them together, in this order, and never from the message alone.

Shapes understood: OpenAI ``{"error": {"message", "type", "param", "code"}}`` (and the SDK's flattened inner
object), the Responses API's flat ``{"type": "error", "code", …}``, nested ``{"type": "error", "error": {…}}``
and ``response.failed`` events, Anthropic ``{"type": "error", "error": {"type", "message"}}``, Gemini
``{"error": {"code", "message", "status", "details"}}`` (also wrapped in a one-element list).

Nothing from the message is kept, and ``type``/``code`` are kept only when they look like identifiers with no
credential in them: a hostile or buggy body cannot smuggle text into records.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import Final

from ._redact import redact_text
from ._taxonomy import Confidence, ProviderError, ProviderErrorKind

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

# Body values that name the problem precisely; they win over the status.
_SPECIFIC_CODE: Final = {
    "context_length_exceeded": _P.CONTEXT_OVERFLOW,
    "insufficient_quota": _P.QUOTA_EXHAUSTED,
    "billing_hard_limit_reached": _P.QUOTA_EXHAUSTED,
    "rate_limit_exceeded": _P.RATE_LIMIT,
    "content_filter": _P.CONTENT_FILTER,
    "content_policy_violation": _P.CONTENT_FILTER,
    "bio_policy": _P.CONTENT_FILTER,  # Responses API
    "misalignment_policy_violation": _P.CONTENT_FILTER,
    "image_content_policy_violation": _P.CONTENT_FILTER,
    "server_is_overloaded": _P.OVERLOADED,
    "ResponsibleAIPolicyViolation": _P.CONTENT_FILTER,  # Azure OpenAI's inner code
    "invalid_api_key": _P.AUTH,
    "model_not_found": _P.NOT_FOUND,
    "unsupported_country_region_territory": _P.PERMISSION,
    # Anthropic error.details.error_code
    "contract_spend_limit_reached": _P.QUOTA_EXHAUSTED,
    "enforced_spend_limit_reached": _P.QUOTA_EXHAUSTED,
    "linked_organization_spend_limit_reached": _P.QUOTA_EXHAUSTED,
    "request_body_too_large_after_decoding": _P.REQUEST_TOO_LARGE,
    # Gemini google.rpc.ErrorInfo reasons
    "API_KEY_INVALID": _P.AUTH,
    "API_KEY_SERVICE_BLOCKED": _P.PERMISSION,
    "BILLING_DISABLED": _P.QUOTA_EXHAUSTED,
}
_SPECIFIC_TYPE: Final = {
    "overloaded_error": _P.OVERLOADED,
    "rate_limit_error": _P.RATE_LIMIT,
    "authentication_error": _P.AUTH,
    "permission_error": _P.PERMISSION,
    "not_found_error": _P.NOT_FOUND,
    "request_too_large": _P.REQUEST_TOO_LARGE,
    "billing_error": _P.QUOTA_EXHAUSTED,
    "insufficient_quota": _P.QUOTA_EXHAUSTED,
    # Gemini status
    "RESOURCE_EXHAUSTED": _P.RATE_LIMIT,
    "PERMISSION_DENIED": _P.PERMISSION,
    "UNAUTHENTICATED": _P.AUTH,
    "NOT_FOUND": _P.NOT_FOUND,
    "UNAVAILABLE": _P.OVERLOADED,  # Gemini's "The model is overloaded" (its 529)
}
# Broad categories: they decide only when the status does not.
_GENERIC: Final = {
    "invalid_request_error": _P.INVALID_REQUEST,
    "api_error": _P.SERVER_ERROR,
    "server_error": _P.SERVER_ERROR,
    "timeout_error": _P.SERVER_ERROR,
    "vector_store_timeout": _P.SERVER_ERROR,
    "invalid_prompt": _P.INVALID_REQUEST,
    "data_residency_mismatch": _P.INVALID_REQUEST,
    "INVALID_ARGUMENT": _P.INVALID_REQUEST,
    "FAILED_PRECONDITION": _P.INVALID_REQUEST,
    "OUT_OF_RANGE": _P.INVALID_REQUEST,
    "INTERNAL": _P.SERVER_ERROR,
    "DEADLINE_EXCEEDED": _P.SERVER_ERROR,
    "ABORTED": _P.SERVER_ERROR,
}

_CONTEXT_OVERFLOW_RE: Final = re.compile(
    r"prompt is too long|maximum context length|context (?:length|window)|input token count"
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
    if any(k in payload for k in ("code", "type", "status", "message", "error")):
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
    http_code: int | None = None  # a numeric error.code (Gemini, OpenRouter): an HTTP status in the body
    quota_per_day: bool = False
    retry_delay_s: float | None = None
    message: str = ""


def _gemini_details(details: object) -> tuple[str | None, bool, float | None]:
    reason: str | None = None
    per_day = False
    delay: float | None = None
    if not isinstance(details, (list, tuple)):
        return reason, per_day, delay
    for item in details[:_MAX_DETAILS]:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("@type")
        kind = kind if isinstance(kind, str) else ""
        if kind.endswith("ErrorInfo") and reason is None:
            reason = _token(item.get("reason"))
        elif kind.endswith("QuotaFailure"):
            violations = item.get("violations")
            for v in violations[:_MAX_DETAILS] if isinstance(violations, (list, tuple)) else ():
                if isinstance(v, Mapping):
                    quota_id = v.get("quotaId")
                    per_day = per_day or (isinstance(quota_id, str) and "perday" in quota_id.lower())
        elif kind.endswith("RetryInfo"):
            text = item.get("retryDelay")
            m = _RETRY_DELAY_RE.fullmatch(text) if isinstance(text, str) else None
            if m is not None:
                delay = float(m.group(1))
    return reason, per_day, delay


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
    http_code = raw_code if type(raw_code) is int and 100 <= raw_code <= 599 else None
    code = _token(raw_code)
    details = error.get("details")
    if isinstance(details, Mapping):  # Anthropic: {"error_code": ...}
        code = _token(details.get("error_code")) or code
    reason, per_day, delay = _gemini_details(details)
    message = error.get("message")
    if not isinstance(message, str) and flat and isinstance(error.get("error"), str):
        message = error.get("error")  # {"error": "text"} from some proxies
    return _Fields(
        type=_token(etype),
        code=reason or code or (str(http_code) if http_code is not None else None),
        status_name=_token(error.get("status")),
        http_code=http_code,
        quota_per_day=per_day,
        retry_delay_s=delay,
        message=message[:_MAX_MESSAGE] if isinstance(message, str) else "",
    )


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


def _decide(status: int | None, f: _Fields) -> tuple[ProviderErrorKind, list[str], Confidence]:
    kind, markers, confidence = _kind(status, f)
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


def _kind(status: int | None, f: _Fields) -> tuple[ProviderErrorKind, list[str], Confidence]:
    """Rules 1 to 3 of the module docstring."""
    markers: list[str] = [] if status is None else [f"status={status}"]
    # 1. a specific body value
    if f.quota_per_day:
        return _P.QUOTA_EXHAUSTED, [*markers, "body.details=quota_per_day"], Confidence.HIGH
    specific: tuple[tuple[str, str | None, Mapping[str, ProviderErrorKind]], ...] = (
        ("body.code", f.code, _SPECIFIC_CODE),
        ("body.type", f.type, _SPECIFIC_CODE),  # OpenAI puts insufficient_quota in either
        ("body.type", f.type, _SPECIFIC_TYPE),
        ("body.status", f.status_name, _SPECIFIC_TYPE),
    )
    for label, value, table in specific:
        if value is not None and value in table:
            return table[value], [*markers, f"{label}={value}"], Confidence.HIGH
    # 2. the status, or for an in-band error the HTTP status its body carries
    effective, label = status, "status"
    if (status is None or 200 <= status <= 299) and f.http_code is not None:
        effective, label = f.http_code, "body.code"
    kind: ProviderErrorKind | None = None
    confidence = Confidence.HIGH
    by_status = _status_kind(effective)
    if by_status is not None:
        kind, confidence = by_status
        if label != "status":
            markers.append(f"{label}={effective}")
    # 3. a generic body value, when the status said nothing
    if kind is None:
        for label, value in (("body.code", f.code), ("body.type", f.type), ("body.status", f.status_name)):
            if value is not None and value in _GENERIC:
                kind, confidence = _GENERIC[value], Confidence.HIGH
                markers.append(f"{label}={value}")
                break
    if kind is None:
        return _P.UNKNOWN, markers, Confidence.LOW
    return kind, markers, confidence


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
    kind, markers, confidence = _decide(status, fields)
    lowered = _lower_headers(headers)
    retry = _retry_after(lowered, None, RETRY_AFTER_CAP_S)
    retry_after_s: float | None = None
    if retry is not None:
        retry_after_s = retry[0]
        markers.append(retry[1])
    elif fields.retry_delay_s is not None:
        retry_after_s = min(fields.retry_delay_s, RETRY_AFTER_CAP_S)
        markers.append("body.retry_delay")
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


def provider_error_from_document(payload: object) -> ProviderError | None:
    """The error a 2xx body that is one JSON document instead of an event stream names, or None when it is
    not an error (a whole completion, anything else). An error is an ``error`` object (OpenAI, Gemini, also
    in a one-element list) or ``{"type": "error", ...}`` (Anthropic, Responses); the 2xx status says
    nothing, so the body decides, marked ``body=not_event_stream``."""
    first = payload[0] if isinstance(payload, list) and payload else payload
    if not isinstance(first, Mapping):
        return None
    if first.get("type") != "error" and not isinstance(first.get("error"), (Mapping, str)):
        return None
    return _build(None, None, first, ("body=not_event_stream",))


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


def provider_error_from_sdk(exc: BaseException) -> ProviderError | None:
    """Classify an ``openai``/``anthropic`` ``APIStatusError``, or the bare ``APIError`` openai raises for an
    in-band error event (matched by name); None for anything else, connection errors included.

    The body decides over the status: an Anthropic in-band ``event: error`` arrives with ``status_code=200``.
    """
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
    return _build(
        status if type(status) is int else None,
        headers if isinstance(headers, Mapping) else None,
        payload,
        (f"sdk={sdk}",),
    )
