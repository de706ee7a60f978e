"""Transparent mode: every stream an SDK or agent framework reads goes through the machine, with no change
to the agent's code. Hand the SDK a client from here; the SDK's objects and exceptions stay its own.

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
from ._context import context
from ._notes import failure_of, run_of
from ._rules import DEFAULT_RULES, Rule
from ._transport import LIBRARIES, library

__all__ = [
    "DEFAULT_RULES",
    "LIBRARIES",
    "Rule",
    "async_http_client",
    "async_transport",
    "context",
    "default_library",
    "failure_of",
    "http_client",
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
        names = {re.split(r"[\s;\[<>=!~(]", req, maxsplit=1)[0] for req in requires}
        return "httpx2" if "httpx2" in names else "httpx"
    return "httpx"


def async_transport(
    inner: Any = None,
    *,
    http: str | None = None,
    config: StreamConfig | None = None,
    rules: Iterable[Rule] = (),
    strict_eof: bool = False,
) -> Any:
    """An async transport of ``http`` ("httpx" or "httpx2"; see ``default_library``) that taps every streaming
    LLM response. ``inner``: the transport that does the IO (default: the library's ``AsyncHTTPTransport()``).
    ``config``: watchdogs, bounds and sinks of every run; ``rules``: extra ``Rule``s for paths the defaults do
    not know; ``strict_eof``: fail the read of a stream that ended without its terminal event."""
    module, async_class, _, _ = library(http or default_library())
    return async_class(
        inner if inner is not None else module.AsyncHTTPTransport(),
        library=module,
        config=config,
        rules=rules,
        strict_eof=strict_eof,
    )


def transport(
    inner: Any = None,
    *,
    http: str | None = None,
    config: StreamConfig | None = None,
    rules: Iterable[Rule] = (),
    strict_eof: bool = False,
) -> Any:
    """The sync counterpart of ``async_transport``."""
    module, _, sync_class, _ = library(http or default_library())
    return sync_class(
        inner if inner is not None else module.HTTPTransport(),
        library=module,
        config=config,
        rules=rules,
        strict_eof=strict_eof,
    )


def _split(module: Any, inner_class: str, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    inner = kwargs.pop("transport", None)
    own = {name: kwargs.pop(name) for name in _TRANSPORT_ARGS if name in kwargs}
    if inner is None:
        inner = getattr(module, inner_class)(**own)
    elif own:
        raise TypeError(f"pass {', '.join(own)} to the transport you give, not to the client")
    return inner, kwargs


def async_http_client(
    *,
    http: str | None = None,
    config: StreamConfig | None = None,
    rules: Iterable[Rule] = (),
    strict_eof: bool = False,
    **client_kwargs: Any,
) -> Any:
    """A ready ``httpx.AsyncClient`` (or ``httpx2.AsyncClient``) whose every streaming LLM response is tapped:
    ``AsyncOpenAI(http_client=streamfsm.async_http_client())``. ``client_kwargs`` go to the client
    (``timeout``, ``headers``, ...), those of the connection (``verify``, ``http2``, ``limits``, ``proxy``,
    ...) to its transport, and ``transport=`` replaces the inner transport."""
    name = http or default_library()
    module = library(name)[0]
    inner, rest = _split(module, "AsyncHTTPTransport", dict(client_kwargs))
    tap = async_transport(inner, http=name, config=config, rules=rules, strict_eof=strict_eof)
    return module.AsyncClient(transport=tap, **rest)


def http_client(
    *,
    http: str | None = None,
    config: StreamConfig | None = None,
    rules: Iterable[Rule] = (),
    strict_eof: bool = False,
    **client_kwargs: Any,
) -> Any:
    """The sync counterpart of ``async_http_client``: ``OpenAI(http_client=streamfsm.http_client())``."""
    name = http or default_library()
    module = library(name)[0]
    inner, rest = _split(module, "HTTPTransport", dict(client_kwargs))
    tap = transport(inner, http=name, config=config, rules=rules, strict_eof=strict_eof)
    return module.Client(transport=tap, **rest)
