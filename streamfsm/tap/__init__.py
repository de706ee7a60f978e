"""Transparent mode: every LLM call an SDK or agent framework makes (streaming or not) goes through the
machine, with no change to the agent's code. Hand the SDK a client from here; the SDK's objects and
exceptions stay its own.

    client = openai.AsyncOpenAI(http_client=streamfsm.async_http_client(config=config))
    ...
    except openai.APIError as exc:
        failure = streamfsm.failure_of(exc)  # .diagnosis, .record; None if the tap saw no failure
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
from collections.abc import Iterable
from typing import Any

from ..runtime import StreamConfig
from ._context import attempt, context, current_ids, relaying
from ._notes import failure_of, run_of
from ._rules import DEFAULT_RULES, Rule, check_rules, format_of, llm_request
from ._run import TapRun
from ._transport import LIBRARIES, library

__all__ = [
    "DEFAULT_RULES",
    "LIBRARIES",
    "Rule",
    "TapRun",
    "async_http_client",
    "async_transport",
    "attempt",
    "check_rules",
    "context",
    "current_ids",
    "default_library",
    "failure_of",
    "format_of",
    "http_client",
    "llm_request",
    "relaying",
    "run_of",
    "transport",
]

# Client arguments that configure the default transport; with a transport given, the client ignores them.
_TRANSPORT_ARGS = ("verify", "cert", "trust_env", "http1", "http2", "limits", "proxy")


@functools.cache  # read once: the installed SDKs do not change under a running process
def default_library() -> str:
    """The HTTP library of the installed SDK generation: "httpx2" when the installed ``openai`` (else
    ``anthropic``) requires it (openai 3.x, anthropic 2.x), else "httpx". Pass ``http=`` when both
    generations are installed side by side."""
    for sdk in ("openai", "anthropic"):
        try:
            requires = importlib.metadata.requires(sdk) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        # What the SDK always needs: not what one of its extras would add (openai 2.x has an httpx2 extra).
        names = {re.split(r"[\s;\[<>=!~(]", req, maxsplit=1)[0] for req in requires if "extra" not in req}
        return "httpx2" if "httpx2" in names else "httpx"
    return "httpx"


def async_transport(
    inner: Any = None,
    *,
    http: str | None = None,
    config: StreamConfig | None = None,
    rules: Iterable[Rule] = (),
    strict_eof: bool | None = None,
) -> Any:
    """An async transport of ``http`` ("httpx" or "httpx2"; see ``default_library``) that taps every LLM call
    (streaming or not). ``inner``: the transport that does the IO (default: the library's
    ``AsyncHTTPTransport()``). ``config``: watchdogs, bounds and sinks of every run; ``rules``: extra
    ``Rule``s for paths the defaults do not know; ``strict_eof``: fail the read of a stream that ended
    without its terminal event with the library's ``RemoteProtocolError`` (default None: wherever an SDK
    reads a stream, as no SDK tells that end from a whole answer's; not for a non-streaming answer, whose
    cut the SDK's JSON parse finds, nor in ``streamfsm.relay``, which reads the run itself)."""
    return _tap(True, inner, http, config, rules, strict_eof)


def transport(
    inner: Any = None,
    *,
    http: str | None = None,
    config: StreamConfig | None = None,
    rules: Iterable[Rule] = (),
    strict_eof: bool | None = None,
) -> Any:
    """The sync counterpart of ``async_transport``."""
    return _tap(False, inner, http, config, rules, strict_eof)


def async_http_client(
    *,
    http: str | None = None,
    config: StreamConfig | None = None,
    rules: Iterable[Rule] = (),
    strict_eof: bool | None = None,
    **client_kwargs: Any,
) -> Any:
    """A ready ``httpx.AsyncClient`` (or ``httpx2.AsyncClient``) whose every LLM call is tapped:
    ``AsyncOpenAI(http_client=streamfsm.async_http_client())``. ``client_kwargs`` go to the client
    (``timeout``, ``headers``, ...), those of the connection (``verify``, ``http2``, ``limits``, ``proxy``,
    ...) to its transport, and ``transport=`` replaces the inner transport."""
    return _client(True, http, config, rules, strict_eof, client_kwargs)


def http_client(
    *,
    http: str | None = None,
    config: StreamConfig | None = None,
    rules: Iterable[Rule] = (),
    strict_eof: bool | None = None,
    **client_kwargs: Any,
) -> Any:
    """The sync counterpart of ``async_http_client``: ``OpenAI(http_client=streamfsm.http_client())``."""
    return _client(False, http, config, rules, strict_eof, client_kwargs)


def _tap(
    is_async: bool,
    inner: Any,
    http: str | None,
    config: StreamConfig | None,
    rules: Iterable[Rule],
    strict_eof: bool | None,
) -> Any:
    module, async_class, sync_class, _ = library(http or default_library())
    if inner is None:
        inner = module.AsyncHTTPTransport() if is_async else module.HTTPTransport()
    cls = async_class if is_async else sync_class
    return cls(inner, library=module, config=config, rules=rules, strict_eof=strict_eof)


def _client(
    is_async: bool,
    http: str | None,
    config: StreamConfig | None,
    rules: Iterable[Rule],
    strict_eof: bool | None,
    client_kwargs: dict[str, Any],
) -> Any:
    module = library(http or default_library())[0]
    kwargs = dict(client_kwargs)
    inner = kwargs.pop("transport", None)
    own = {name: kwargs.pop(name) for name in _TRANSPORT_ARGS if name in kwargs}
    if inner is None:
        inner = (module.AsyncHTTPTransport if is_async else module.HTTPTransport)(**own)
    elif own:
        raise TypeError(f"pass {', '.join(own)} to the transport you give, not to the client")
    tap = _tap(is_async, inner, module.__name__, config, rules, strict_eof)
    return (module.AsyncClient if is_async else module.Client)(transport=tap, **kwargs)
