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

from ._app import Relay, RelayConfig
from ._errors import ErrorsData, PageQuery, default_store, remove_store
from ._net import is_loopback
from ._page import Links, errors_page, machine_svg, report_document, run_page, runs_page

__all__ = [
    "ErrorsData",
    "Links",
    "PageQuery",
    "Relay",
    "RelayConfig",
    "default_store",
    "errors_page",
    "is_loopback",
    "machine_svg",
    "remove_store",
    "report_document",
    "run_page",
    "runs_page",
]
