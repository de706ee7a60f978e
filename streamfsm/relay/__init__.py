"""The relay: a pass-through LLM proxy that any client can point at (``streamfsm relay``).

It forwards every request to one upstream byte for byte and streams the answer back as it arrives. Each
streaming LLM response is read through the tap (``streamfsm.tap``), so it is a run whose record carries the
relay's view of how it closed (its close kind: ``client_abort``, ``client_write_failed``, ``upstream_error``,
``upstream_timeout``, ``upstream_unreachable``, ``upstream_premature_close``, ``relay_shutdown`` or
``completed``: the terminal event reached the client), what went downstream, and the
correlation ids (request id, route, model, an account key). ``/admin/errors`` groups the failed runs, with
failure rates and trends over a window, filters and search, from a run store (``streamfsm.store``), and
lists the streams a relay's death cut; ``/admin/metrics`` serves Prometheus metrics.

    app = streamfsm.relay.Relay(streamfsm.relay.RelayConfig(upstream="https://api.openai.com",
                                                            error_log="errors.jsonl"))
    # any ASGI server: uvicorn.run(app, host="127.0.0.1", port=8787)

Serving it from the command line needs the ``relay`` extra (uvicorn): ``pip install 'streamfsm[relay]'``.
"""

from typing import TYPE_CHECKING, Any

from ._app import IDLE_TIMEOUT_S, Relay, RelayConfig, settle_collector
from ._errors import ErrorsData, PageQuery, default_store, page_report, remove_store
from ._journal import interrupted
from ._keys import key_file
from ._net import is_loopback
from ._page import Links, errors_page, machine_svg, report_document, run_page, runs_page
from ._table import RouteTable

if TYPE_CHECKING:
    from ._server import GuardedH11Protocol, QuietAcceptErrors

__all__ = [
    "IDLE_TIMEOUT_S",
    "ErrorsData",
    "GuardedH11Protocol",
    "Links",
    "PageQuery",
    "QuietAcceptErrors",
    "Relay",
    "RelayConfig",
    "RouteTable",
    "default_store",
    "errors_page",
    "interrupted",
    "is_loopback",
    "key_file",
    "machine_svg",
    "page_report",
    "remove_store",
    "report_document",
    "run_page",
    "runs_page",
    "settle_collector",
]


def __getattr__(name: str) -> Any:
    # The server's pieces subclass uvicorn's (the ``relay`` extra): loaded only by who serves.
    if name in ("GuardedH11Protocol", "QuietAcceptErrors"):
        from . import _server

        return getattr(_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
