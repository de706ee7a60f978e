"""Test kit: a fault-injecting provider, the scenario catalog, the harness that checks outcomes, and
realistic wire streams for every registered provider format (each format's builders are its kit, named by
its ``Format.kit``).

* `FaultServer` / `FaultServerThread`: a real HTTP/1.1 server on 127.0.0.1 that plays a script per request.
* Script steps (`Headers`, `Send`, `Fin`, `Rst`, `Stall`, …) and `Scenario`: faults as data, with the
  outcome the taxonomy says they must have; `Agent`: the part the agent plays.
* `RefusesPrefill`: a router wrapper that refuses an assistant prefill as Anthropic's current models do.
* `catalog()` / `find()`: every fault of the catalog, per format, by stable name.
* `run_scenario()` / `run_catalog()`: play scenarios through the runtime (or an SDK and ``wrap()``) and
  compare each run record with the expectation (`Outcome`).
* Wire builders (`build`, `text_stream`, `tool_call_stream`, `error_event`, …).
* ``streamfsm.testing.pytest_plugin``: the ``fault_provider`` fixture; ``streamfsm.testing.strategies``:
  Hypothesis strategies.
"""

import importlib
import warnings
from typing import Any

from ._answers import whole_answer
from ._background import BackgroundResponses, Cut, refusal_body
from ._harness import (
    BODIES,
    DEFAULT_TIMEOUT_S,
    RAW_TRANSPORT_STRINGS,
    SCENARIO_HEADER,
    SDK_FORMATS,
    TAP_PREFIX,
    Outcome,
    ScenarioRouter,
    SdkUnavailable,
    http_client,
    peak_in_flight,
    plan,
    run_catalog,
    run_scenario,
    scenario_url,
    sdk_available,
    sdk_client,
)
from ._prefill import PREFILL_REFUSAL, RefusesPrefill, ends_with_assistant
from ._recovery_scenarios import recovery_catalog, run_recovery
from ._route_scenarios import FORMAT as ROUTE_FORMAT
from ._route_scenarios import (
    ONE_ROUTE,
    RELAY,
    RETRYING,
    TAP,
    Provider,
    RouteOutcome,
    RouteScenario,
    playable,
    relay_leg,
    relay_table,
    route_catalog,
    run_routes,
    tally,
)
from ._scenarios import WATCHDOG_S, catalog, find, names
from ._script import (
    Agent,
    End,
    Fin,
    Headers,
    Keepalive,
    NextCreate,
    Rst,
    Scenario,
    Script,
    ScriptError,
    Send,
    SendRaw,
    Sleep,
    Stall,
    Status,
    Step,
    Upgrade,
    WsClose,
    check_script,
    cut_chunk,
    encode_chunk,
    unused_port,
)
from ._server import FaultServer, FaultServerError, FaultServerThread, Request, RequestRecord
from ._wire import (
    CACHED_TOKENS,
    OUTPUT_TOKENS,
    PROMPT_TOKENS,
    REASONING_TOKENS,
    SSE_FORMATS,
    WIRE_FORMATS,
    build,
    comment,
    error_event,
    frame,
    keepalive,
    refusal_stream,
    text_stream,
    tool_call_stream,
)


def __getattr__(name: str) -> Any:
    # The modules with a dependency of their own (Hypothesis, pytest) load on first use, as an import would.
    if name in _RENAMED:  # an old name, kept for code written against it
        warnings.warn(f"{__name__}.{name} is now {_RENAMED[name]}", DeprecationWarning, stacklevel=2)
        return globals()[_RENAMED[name]]
    if name in ("pytest_plugin", "strategies"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BODIES",
    "CACHED_TOKENS",
    "DEFAULT_TIMEOUT_S",
    "ONE_ROUTE",
    "OUTPUT_TOKENS",
    "PREFILL_REFUSAL",
    "PROMPT_TOKENS",
    "RAW_TRANSPORT_STRINGS",
    "REASONING_TOKENS",
    "RELAY",
    "RETRYING",
    "ROUTE_FORMAT",
    "SCENARIO_HEADER",
    "SDK_FORMATS",
    "SSE_FORMATS",
    "TAP",
    "TAP_PREFIX",
    "WATCHDOG_S",
    "WIRE_FORMATS",
    "Agent",
    "BackgroundResponses",
    "Cut",
    "End",
    "FaultServer",
    "FaultServerError",
    "FaultServerThread",
    "Fin",
    "Headers",
    "Keepalive",
    "NextCreate",
    "Outcome",
    "Provider",
    "RefusesPrefill",
    "Request",
    "RequestRecord",
    "RouteOutcome",
    "RouteScenario",
    "Rst",
    "Scenario",
    "ScenarioRouter",
    "Script",
    "ScriptError",
    "SdkUnavailable",
    "Send",
    "SendRaw",
    "Sleep",
    "Stall",
    "Status",
    "Step",
    "Upgrade",
    "WsClose",
    "build",
    "catalog",
    "check_script",
    "comment",
    "cut_chunk",
    "encode_chunk",
    "ends_with_assistant",
    "error_event",
    "find",
    "frame",
    "http_client",
    "keepalive",
    "names",
    "peak_in_flight",
    "plan",
    "playable",
    "recovery_catalog",
    "refusal_body",
    "refusal_stream",
    "relay_leg",
    "relay_table",
    "route_catalog",
    "run_catalog",
    "run_recovery",
    "run_routes",
    "run_scenario",
    "scenario_url",
    "sdk_available",
    "sdk_client",
    "tally",
    "text_stream",
    "tool_call_stream",
    "unused_port",
    "whole_answer",
]


_RENAMED: dict[str, str] = {"FORMATS": "SSE_FORMATS"}
