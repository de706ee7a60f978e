"""Redact what the HTTP libraries underneath log: ``streamfsm.redact_http_logs()``.

httpx (and httpx2) log every request's full URL at INFO, query string and userinfo included (Gemini's
``?key=``, a proxy's ``user:password@``); httpcore (and httpcore2) log each connection step at DEBUG, the
response's headers among them (``set-cookie``, a gateway's echoed key). The filter rewrites each record on
those loggers before any handler sees it: URLs through ``redact_url`` (scheme, host, port and path kept;
userinfo, query and fragment dropped; secret path segments masked), header values by our header
allow-list (values of other headers masked), and the whole message through ``redact_text``.

The relay's logs (uvicorn's access log, the relay's own lines): every field is escaped (``escape_controls``),
so no client can start a line of its own or drive a terminal through a path or a header; the request target
of the access log is redacted as uvicorn quoted it, never percent-decoded.
"""

from __future__ import annotations

import logging
import re
from typing import Final

from ._redact import MASK, redact_headers, redact_text, redact_url

__all__ = ["HTTP_LOGGERS", "escape_controls", "guard_relay_logs", "redact_http_logs"]

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


def escape_controls(text: str) -> str:
    """``text`` with each character that is not printable (control characters, line and paragraph separators,
    format characters, lone surrogates; a plain space stays) written as its escape (``\\r``, ``\\x1b``,
    ``\\u2028``): a logged field can neither start a line of its own nor send a terminal an escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _escaped(args: object) -> object:
    if isinstance(args, tuple):
        return tuple(escape_controls(arg) if isinstance(arg, str) else arg for arg in args)
    return args


class _EscapeFields(logging.Filter):
    """Every string argument of a record escaped; a record without arguments, its message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            record.args = _escaped(record.args)  # type: ignore[assignment]
        elif isinstance(record.msg, str):
            record.msg = escape_controls(record.msg)
        return True


def _unfold_userinfo(segment: str) -> str:
    """A quoted segment's userinfo (``user%3Apw%40host``) masked, as ``redact_url`` masks ``user:pw@``."""
    at = segment.upper().rfind("%40")
    return MASK + segment[at:] if at > 0 else segment


def redact_target(target: str) -> str:
    """A request target as uvicorn's access log prints it (the path percent-quoted, then the raw query),
    redacted without decoding it: query and fragment dropped, a quoted userinfo and secret segments masked."""
    path = target.split("#", 1)[0].split("?", 1)[0]
    return redact_url("/".join(_unfold_userinfo(segment) for segment in path.split("/")))


class _RedactAccessLog(logging.Filter):
    """uvicorn's access log prints the request target with its query (Gemini's ``?key=``) and, for an
    absolute-form target, its userinfo, percent-quoted: the target redacted, every field escaped."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple):  # uvicorn: (client, method, target, http version, status)
            record.args = tuple(
                escape_controls(redact_target(arg) if index == 2 else arg) if isinstance(arg, str) else arg
                for index, arg in enumerate(args)
            )
        return True


_ACCESS_FILTER: Final = _RedactAccessLog()
_ESCAPE_FILTER: Final = _EscapeFields()
_ESCAPED_LOGGERS: Final = ("streamfsm.relay", "uvicorn.error")


def guard_relay_logs() -> None:
    """uvicorn's access log redacted and escaped, the relay's and uvicorn's own lines escaped (idempotent)."""
    access = logging.getLogger("uvicorn.access")
    if _ACCESS_FILTER not in access.filters:
        access.addFilter(_ACCESS_FILTER)
    for name in _ESCAPED_LOGGERS:
        logger = logging.getLogger(name)
        if _ESCAPE_FILTER not in logger.filters:
            logger.addFilter(_ESCAPE_FILTER)
