"""Redact what the HTTP libraries underneath log: ``streamfsm.redact_http_logs()``.

httpx (and httpx2) log every request's full URL at INFO, query string and userinfo included (Gemini's
``?key=``, a proxy's ``user:password@``); httpcore (and httpcore2) log each connection step at DEBUG, the
response's headers among them (``set-cookie``, a gateway's echoed key). The filter rewrites each record on
those loggers before any handler sees it: URLs through ``redact_url`` (scheme, host, port and path kept;
userinfo, query and fragment dropped; secret path segments masked), header values by our header
allow-list (values of other headers masked), and the whole message through ``redact_text``.
"""

from __future__ import annotations

import logging
import re
from typing import Final

from .classify._redact import MASK, redact_headers, redact_text, redact_url

__all__ = ["HTTP_LOGGERS", "redact_http_logs"]

# A filter on a logger sees only what is logged on that very logger, not what its children propagate, so
# every logger these libraries create is named (httpcore 1.0, httpcore2 2.x).
HTTP_LOGGERS: Final = (
    "httpx",
    "httpx2",
    *(
        f"{package}{suffix}"
        for package in ("httpcore", "httpcore2")
        for suffix in ("", ".connection", ".http11", ".http2", ".proxy", ".socks")
    ),
)

_MESSAGE_LIMIT: Final = 8192
_URL_RE: Final = re.compile(r"""[A-Za-z][A-Za-z0-9+.\-]*://[^\s'"<>]+""")
# httpcore prints headers as the repr of a list of byte-string pairs: (b'name', b'value').
_HEADER_PAIR_RE: Final = re.compile(
    r"""\(b(['"])(?P<name>[^'"]*)\1, b(['"])(?P<value>(?:\\.|(?!\3).)*)\3\)"""
)


def _redact_pair(match: re.Match[str]) -> str:
    name, value = match.group("name"), match.group("value")
    kept = redact_headers([(name, value)]).get(name.strip().lower())
    return f"(b'{name}', b'{MASK if kept is None else kept}')"


def redact_message(message: str) -> str:
    """One HTTP library's log message with URLs, header values and credentials masked."""
    out = _URL_RE.sub(lambda m: redact_url(m.group(0)), message)
    out = _HEADER_PAIR_RE.sub(_redact_pair, out)
    return redact_text(out, limit=_MESSAGE_LIMIT)


class _RedactHttpLogs(logging.Filter):
    """Rewrites a record's message in place; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format: say so rather than pass its arguments on
            message = "(an HTTP library's log message that could not be formatted)"
        record.msg = redact_message(message)
        record.args = None
        if record.exc_info is not None or record.exc_text:
            # A traceback's text can quote a URL; keep the exception's class only.
            exc = record.exc_info[1] if record.exc_info else None
            record.msg += f" ({type(exc).__name__})" if exc is not None else ""
            record.exc_info, record.exc_text = None, None
        return True


_FILTER: Final = _RedactHttpLogs()


def redact_http_logs() -> tuple[str, ...]:
    """Install our redaction on the loggers of httpx, httpx2, httpcore and httpcore2 (idempotent).

    Every record they log then carries URLs without userinfo, query or fragment, header values only for
    allow-listed headers (redacted), and no credential ``redact_text`` recognises; an exception attached to
    a record keeps its class only. Returns the logger names covered. Not covered: other loggers (the
    openai and anthropic SDKs log request options, prompts included, on their own loggers at DEBUG), and
    a credential in a shape ``redact_text`` does not know, outside URLs and headers.
    """
    for name in HTTP_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    return HTTP_LOGGERS
