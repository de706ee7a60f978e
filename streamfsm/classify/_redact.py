"""The one redaction pass, applied when a value is captured (never later, on an already flattened string).

Rules, in the order a reader should trust them:

* Known credential formats are masked wherever they appear: ``sk-…`` (OpenAI, Anthropic ``sk-ant-…``),
  ``AIza…`` (Google), ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``/``github_pat_`` (GitHub), ``AKIA``/``ASIA``
  (AWS), ``xox?-`` (Slack), JWTs, ``Bearer <token>`` and ``Basic <base64>``.
* ``name=value`` / ``name: value`` / ``"name": "value"`` pairs whose name ends in a secret-ish word (key,
  token, secret, password, auth, signature, session, cookie, …) lose their value, whatever it looks like.
* Credentials inside URLs (``scheme://user:pass@host``) are dropped; e-mail addresses are masked; home
  directories become ``~``.
* The result is truncated to ``limit`` characters, after masking, so a cut can never expose half a secret.

``redact_url`` keeps scheme, host, port and path only. ``redact_headers`` keeps an allow-list.
Precompiled expressions whose branches start with literals: text without secrets costs one quick scan.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final
from urllib.parse import unquote

__all__ = ["MASK", "redact_headers", "redact_text", "redact_url"]

MASK: Final = "[REDACTED]"
_EMAIL_MASK: Final = "[EMAIL]"
_ELLIPSIS: Final = "…"

# Names whose value is a secret, matched as a suffix of the name (so ``x-api-key``, ``openai_api_key``,
# ``client_secret`` and ``jsessionid`` are all caught) on an ASCII-lower-cased copy of the text. Over-masking
# (``monkey=3``) is the accepted price.
_SECRET_NAMES: Final = (
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "auth",
    "authorization",
    "credential",
    "credentials",
    "signature",
    "sig",
    "session",
    "sessionid",
    "session_id",
    "cookie",
    "bearer",
)
# A name and its separator; "bearer" alone is followed by whitespace ("Bearer <token>").
_PAIR_HEAD_RE: Final = re.compile(
    r"(?:" + "|".join(_SECRET_NAMES) + r")(?:[\"']?\s*[:=]\s*|(?<=bearer)[ \t]+)"
)
# A value: quoted (to its closing quote, escapes allowed, or to the end of the line) or a bare run; an
# auth scheme word in front of it is kept.
_PAIR_VALUE_RE: Final = re.compile(
    r"(?P<scheme>(?:bearer|basic|token|digest)[ \t]+)?"
    r"""(?P<value>"(?:[^"\\\r\n]|\\.)*"?|'(?:[^'\\\r\n]|\\.)*'?|[^\s"'&,;}\]]+)"""
)
_COOKIE_VALUE_RE: Final = re.compile(r"[^\r\n]+")
# the whole run up to a blank or delimiter: a shorter token class would stop inside a glued "x-api-key=..."
_BEARER_VALUE_RE: Final = re.compile(r"""[^\s"'<>,;]{8,}""")
_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

# Credential formats as issued (case-sensitive). Each starts with a literal, so ``re`` skips ahead on a
# character set and text without secrets costs one quick scan (an alternation of case-insensitive words, or of
# branches that open with a group, tries every branch at every position: measured 20x slower).
_KEY_FORMATS: Final = (
    # OpenAI sk-/sk-proj-/sk-svcacct-, Anthropic sk-ant-: random bodies always hold a digit, which spares
    # words such as "task-list-item"
    r"sk-(?=[A-Za-z_\-]*[0-9])[A-Za-z0-9_\-]{8,}",
    r"AIza[0-9A-Za-z_\-]{20,}",  # Google API keys
    r"gh[pousr]_[A-Za-z0-9]{20,}",
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"AKIA[0-9A-Z]{16}",
    r"ASIA[0-9A-Z]{16}",
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
    r"eyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*",  # JWT
)
_TOKEN_RE: Final = re.compile(
    r"://[^/\s?#]+@"  # credentials in a URL's authority, up to the last "@" before the path
    r"|Basic[ \t]+[A-Za-z0-9+/]{8,}={0,2}|" + "|".join(_KEY_FORMATS)
)
# Only scanned when the text holds an "@" (an address's local part cannot be anchored on a literal).
_EMAIL_RE: Final = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}"
)
# Only scanned when a cheap substring test says a home directory may be there. A path must start a word (or
# follow "file://"), so "https://host/home/page" keeps its path.
_HOME_RE: Final = re.compile(
    r"(?<![^\s\"'=:(\[,/`])/(?:home|Users)/[^/\s\"'<>]+"
    r"|(?<![A-Za-z0-9])[A-Za-z]:(?:\\\\|\\)[Uu][Ss][Ee][Rr][Ss](?:\\\\|\\)[^\\\s\"'<>]+"
)
_HOME_HINTS: Final = ("/home/", "/Users/", "sers\\", "SERS\\")

# Any of these in a URL path segment or host means it is a credential.
_SEGMENT_SECRET_RE: Final = re.compile("|".join(_KEY_FORMATS))
# A long opaque segment with letters and digits is treated as a token too (resource ids lose out).
_OPAQUE_SEGMENT_RE: Final = re.compile(r"(?=[A-Za-z_\-]*[0-9])(?=[0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{40,}")
_URL_RE: Final = re.compile(
    r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*:)?//(?P<authority>[^/\\]*)(?P<path>.*)$", re.S
)
# Characters a token can be made of; a cut inside such a run drops the whole run.
_TOKEN_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.+/=~:%@")
_TOKEN_SLACK: Final = 4096
_URL_LIMIT: Final = 1000


def _mask_pairs(s: str) -> str:
    low = s.translate(_ASCII_LOWER)  # same length and indices as s
    head = _PAIR_HEAD_RE.search(low)
    if head is None:
        return s
    # Value spans to mask, found head by head. The next head is searched from the end of this head, not of
    # its value: in "Bearer api_key: v", the bearer value "api_key:" hides a pair whose value must go too.
    spans: list[tuple[int, int]] = []
    while head is not None:
        pos = head.end()
        if low.startswith("cookie", head.start()):
            value = _COOKIE_VALUE_RE.match(low, pos)  # every cookie on the line
        elif low.startswith("bearer", head.start()) and not low[head.start() + 6 : pos].strip(" \t"):
            value = _BEARER_VALUE_RE.match(low, pos)
        else:
            value = _PAIR_VALUE_RE.match(low, pos)
            if value is not None and value.group("scheme"):
                pos = value.start("value")
        if value is not None and not s.startswith(MASK, pos):  # skip what is masked already
            if spans and pos <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(spans[-1][1], value.end()))
            else:
                spans.append((pos, value.end()))
        head = _PAIR_HEAD_RE.search(low, head.end())
    parts: list[str] = []
    last = 0
    for begin, end in spans:
        parts.append(s[last:begin])
        quote = s[begin]
        # keep a quoted value's quotes so JSON-looking text stays readable
        parts.append(quote + MASK + quote if quote in ("'", '"') else MASK)
        last = end
    parts.append(s[last:])
    return "".join(parts)


def _mask_token(m: re.Match[str]) -> str:
    text = m.group(0)
    if text.startswith("://"):
        return "://" + MASK + "@"
    if text.startswith("Basic"):
        return "Basic " + MASK
    return MASK


def redact_text(s: str, *, limit: int = 200) -> str:
    """Mask credentials, e-mail addresses and home paths in ``s``, then cut it to ``limit`` characters."""
    if limit <= 0 or not s:
        return ""
    # Bound the work on huge inputs, but never cut inside a token: half a secret would slip past the
    # patterns, and masking shortens text, so what follows the cut can move into the kept window.
    bound = max(4 * limit, 1024)
    if len(s) > bound:
        end = bound
        while end < len(s) and end < bound + _TOKEN_SLACK and s[end] in _TOKEN_CHARS:
            end += 1  # finish the token the bound fell into
        if end < len(s) and s[end] in _TOKEN_CHARS:
            end = bound
            while end > 0 and s[end - 1] in _TOKEN_CHARS:
                end -= 1  # a giant token: drop it whole
        s = s[:end]
    out = _TOKEN_RE.sub(_mask_token, _mask_pairs(s))
    if "@" in out:
        out = _EMAIL_RE.sub(_EMAIL_MASK, out)
    if any(hint in out for hint in _HOME_HINTS):
        out = _HOME_RE.sub("~", out)
    if len(out) > limit:
        out = out[: limit - 1] + _ELLIPSIS
    return out


def _redact_segment(segment: str) -> str:
    decoded = unquote(segment)
    for candidate in (segment, decoded):
        if _SEGMENT_SECRET_RE.search(candidate) or _OPAQUE_SEGMENT_RE.search(candidate):
            return MASK
    at = segment.rfind("@")
    if at > 0:  # "user:pass@host" that slipped into the path of a malformed URL
        segment = MASK + segment[at:]
    return redact_text(segment, limit=_URL_LIMIT)


def redact_url(url: str) -> str:
    """Keep scheme, host, port and path; drop credentials, query and fragment; mask secret path segments."""
    s = url.strip()
    for sep in ("#", "?"):
        s = s.split(sep, 1)[0]
    m = _URL_RE.match(s)
    if m is not None:
        host = m.group("authority").rpartition("@")[2]
        if _SEGMENT_SECRET_RE.search(host):
            host = MASK
        prefix = (m.group("scheme") or "") + "//" + host
        path = m.group("path")
    else:
        prefix = ""
        path = s
    path = "/".join(_redact_segment(seg) for seg in path.split("/"))
    return (prefix + path)[:_URL_LIMIT]


# Headers kept, by exact lower-case name; values still pass through redact_text.
_HEADER_ALLOW: Final = frozenset(
    {
        "content-type",
        "content-length",
        "content-encoding",
        "transfer-encoding",
        "x-request-id",
        "request-id",
        "openai-processing-ms",
        "openai-version",
        "openai-model",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "cf-ray",
        "server",
        "date",
        "via",
        "x-amzn-requestid",
        "x-amz-request-id",
        "x-goog-request-id",
        "x-envoy-upstream-service-time",
    }
)
# Rate-limit families: counters, durations ("6m0s") and timestamps only, nothing free-form.
_HEADER_PREFIXES: Final = ("x-ratelimit-", "anthropic-ratelimit-")
_NUMERIC_ISH_RE: Final = re.compile(r"[0-9][0-9A-Za-z.:+\-]{0,39}")


def _as_str(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    return None


def redact_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """Keep only allow-listed headers (lower-case names), their values redacted; repeated names are joined."""
    items: Iterable[tuple[object, object]]
    if isinstance(headers, Mapping):
        multi = getattr(headers, "multi_items", None)  # httpx.Headers keeps repeated names there
        items = multi() if callable(multi) else headers.items()
    else:
        items = headers
    out: dict[str, str] = {}
    for raw_name, raw_value in items:
        name = _as_str(raw_name)
        value = _as_str(raw_value)
        if name is None or value is None:
            continue
        name = name.strip().lower()
        value = value.strip()
        allowed = name in _HEADER_ALLOW or (
            name.startswith(_HEADER_PREFIXES) and _NUMERIC_ISH_RE.fullmatch(value) is not None
        )
        if not allowed:
            continue
        value = redact_text(value, limit=200)
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out
