"""The harness: play scenarios against the fault server through the runtime (or an SDK and ``wrap()``, or an
SDK's own iteration over a tap client), with the agent's part played as each scenario says, and compare every
run record with the scenario's expectation.

    outcomes = await run_catalog(catalog(), concurrency=32)      # one fault server, every scenario
    assert all(outcome.matched for outcome in outcomes)

    async with FaultServer(ScenarioRouter([scenario])) as server:  # or against a server of your own
        outcome = await run_scenario(scenario, base_url=server.base_url)

One server serves any number of scenarios at once: a run's base URL is ``<server>/scenario/<quoted name>``
(`scenario_url`), and `ScenarioRouter` picks the script by that path prefix, or by the
``x-streamfsm-scenario`` header when the path has none.

The agent's part (`Agent`): tool calls are started with the effect the scenario declares when their
``ToolCall`` arrives; ``abort_on`` calls ``run.abort()``; ``cancel_on`` cancels the scope around the run from
outside; ``stop_on`` leaves the loop; ``raise_on`` raises inside the loop. Every run is bounded by
``timeout`` seconds on top of its own watchdogs.

The tap paths (``"tap:openai"``, ``"tap:anthropic"``, ``"tap:ollama"``; see `TAP_PATHS`) play a scenario the
way an agent that knows nothing of streamfsm does: the SDK's own ``create(stream=True)`` and iteration over an
``AsyncOpenAI`` / ``AsyncAnthropic`` client built on ``streamfsm.async_http_client`` (Ollama's
``AsyncClient.chat(stream=True)`` over a tap transport), and the record the tap hands its sink compared with
the scenario's expectation. What such an agent does is not what `Agent` does
through the runtime (it has no ``run`` to declare tools or abort on), and where the tap's record must
therefore differ, `TAP_DIFFERENCES` says so, with the reason: the one place those differences are written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import functools
import importlib
import importlib.util
import math
import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias, cast
from urllib.parse import quote, unquote

import anyio
import httpx

from ..classify import Action, FailureClass, Phase, Verdict
from ..machine import Trigger
from ..runtime import Ids, Run, RunRecord, StreamConfig, StreamFailed, ToolCall, open_stream
from ..wire import FORMATS as WIRE
from ._kit import kit_of
from ._script import Agent, End, Headers, Scenario, Script, Send, Step, unused_port
from ._server import FaultServer, Request
from ._wire import Format, error_event, text_stream, tool_call_stream

_ErrorShape: TypeAlias = Literal["flat", "nested", "failed"]

__all__ = [
    "BODIES",
    "DEFAULT_TIMEOUT_S",
    "RAW_TRANSPORT_STRINGS",
    "SCENARIO_HEADER",
    "SDK_FORMATS",
    "TAP_DIFFERENCES",
    "TAP_PATHS",
    "TAP_SDK_TIMEOUT_S",
    "Difference",
    "Outcome",
    "ScenarioRouter",
    "SdkUnavailable",
    "http_client",
    "peak_in_flight",
    "plan",
    "run_catalog",
    "run_scenario",
    "scenario_url",
    "sdk_available",
    "sdk_client",
    "tap_client",
]

SCENARIO_PREFIX: Final = "/scenario/"
SCENARIO_HEADER: Final = "x-streamfsm-scenario"
DEFAULT_TIMEOUT_S: Final = 10.0
RETRY_AFTER_TOLERANCE_S: Final = 0.01
RUNS_PER_CLIENT: Final = 32  # runs in flight per shared HTTP client in `run_catalog`
SDK_FORMATS: Final[Mapping[str, tuple[str, ...]]] = {
    sdk: tuple(fmt for fmt in WIRE if kit_of(fmt).harness_sdk == sdk)
    for sdk in dict.fromkeys(kit_of(fmt).harness_sdk for fmt in WIRE)
    if sdk is not None
}
"""The formats each SDK speaks; a scenario of another format has no SDK path."""
WRAPPED_SDKS: Final = ("openai", "anthropic")
"""The SDKs whose streams ``wrap()`` takes; the others (Ollama's client) have a tap path only."""
TAP_PREFIX: Final = "tap:"
TAP_PATHS: Final = tuple(f"{TAP_PREFIX}{sdk}" for sdk in SDK_FORMATS)
"""The tap paths: each SDK's own streaming call and iteration, over a ``streamfsm.async_http_client``."""
TAP_SDK_TIMEOUT_S: Final = 3.0
"""The SDK client's own timeout on a tap path. The tap stops watching a response once its run has ended, but
the SDK may read on (past an in-band error it does not raise on, into whatever follows)."""

RAW_TRANSPORT_STRINGS: Final = (
    "terminated",
    "other side closed",
    "incomplete chunked read",
    "peer closed connection",
    "Server disconnected",
    "Connection error.",
    "ReadError",
    "RemoteProtocolError",
)
"""Raw strings that must never reach a run's plain-language summary."""

BODIES: Final[Mapping[str, Mapping[str, Any]]] = {fmt: kit_of(fmt).body for fmt in WIRE}
"""The smallest request body per format: what the harness sends (the fault server ignores it)."""


class SdkUnavailable(RuntimeError):
    """An SDK path was asked for but the SDK (or ``streamfsm.wrap``) is not installed."""


def scenario_url(server_url: str, name: str) -> str:
    """The base URL under which ``server_url``'s `ScenarioRouter` plays scenario ``name``."""
    return f"{server_url.rstrip('/')}{SCENARIO_PREFIX}{quote(name, safe='')}"


class ScenarioRouter:
    """A fault-server router that plays registered scenarios by name.

    The name comes from the path (``/scenario/<quoted name>/...``, see `scenario_url`) or, failing that,
    from the ``x-streamfsm-scenario`` header; a request naming no scenario gets ``default`` when one is set.
    An unknown name is an error: the client gets a 500 and leaving the server raises ``FaultServerError``.
    """

    def __init__(self, scenarios: Iterable[Scenario] = (), *, default: Scenario | None = None) -> None:
        self._scenarios: dict[str, Scenario] = {}
        self.default = default
        for scenario in scenarios:
            self.add(scenario)

    def add(self, scenario: Scenario) -> None:
        known = self._scenarios.get(scenario.name)
        if known is not None and known != scenario:
            raise ValueError(f"another scenario is already registered as {scenario.name!r}")
        self._scenarios[scenario.name] = scenario

    def __contains__(self, name: object) -> bool:
        return name in self._scenarios

    @staticmethod
    def name_of(request: Request) -> str | None:
        """The scenario ``request`` names, by its path or else its header; None if it names none."""
        if request.path.startswith(SCENARIO_PREFIX):
            return unquote(request.path[len(SCENARIO_PREFIX) :].partition("/")[0])
        return request.header(SCENARIO_HEADER)

    def __call__(self, request: Request) -> Script:
        name = self.name_of(request)
        if name is None:
            if self.default is None:
                raise LookupError(f"request for {request.path!r} names no scenario and there is no default")
            return self.default.script
        try:
            return self._scenarios[name].script
        except KeyError:
            raise LookupError(f"no scenario registered as {name!r}") from None


_EXPECTATIONS: Final = {
    "expected_class": "class",
    "expected_verdict": "verdict",
    "expected_edge": "edge",
    "expected_phase": "phase",
    "expected_cause": "cause",
    "expected_action": "action",
    "expected_retry_after_s": "retry_after_s",
}


@dataclass(frozen=True, slots=True)
class Difference:
    """A place where a tap path rightly sees a scenario otherwise than ``open_stream`` does (whose view is the
    scenario's expectation), and why.

    ``scenarios``: a shell pattern over scenario names (``"*/user-abort"``). ``reason``: why, in plain
    words. ``expect``: what the tap's record says instead, as `Scenario` expectation fields
    (``{"expected_cause": "consumer_stopped"}``). ``carried``: False when the error the SDK raises to the
    agent cannot carry the tap's diagnosis (``streamfsm.failure_of`` finds none). ``sdks``: the SDKs it holds
    for (empty: every SDK). A documented difference is checked like any expectation: one that stops
    happening is a mismatch, not a stale line.
    """

    scenarios: str
    reason: str
    expect: Mapping[str, object] = field(default_factory=dict, hash=False)
    carried: bool = True
    sdks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = set(self.expect) - set(_EXPECTATIONS)
        if unknown:
            raise ValueError(f"expect names no expectation field: {', '.join(sorted(unknown))}")
        if not self.reason or (not self.expect and self.carried):
            raise ValueError(f"difference {self.scenarios!r} needs a reason and something that differs")
        object.__setattr__(self, "expect", MappingProxyType(dict(self.expect)))
        object.__setattr__(self, "sdks", tuple(self.sdks))

    def applies(self, scenario: Scenario, sdk: str) -> bool:
        """True when this difference holds for ``scenario`` played through ``sdk``'s tap path."""
        return fnmatch.fnmatchcase(scenario.name, self.scenarios) and (not self.sdks or sdk in self.sdks)

    def changes(self, scenario: Scenario) -> list[str]:
        """What differs for ``scenario``, e.g. ``["cause: user -> consumer_stopped"]``."""
        changed = dataclasses.replace(scenario, **self.expect)  # type: ignore[arg-type]
        out = []
        for name, label in _EXPECTATIONS.items():
            before, after = getattr(scenario, name), getattr(changed, name)
            if before != after:
                out.append(f"{label}: {_text(before)} -> {_text(after)}")
        if not self.carried:
            out.append("the SDK's error carries no diagnosis (failure_of: None)")
        return out


def _text(value: object) -> str:
    return "-" if value is None else str(getattr(value, "value", value))


_TOOLS_UNSEEN: Final = (
    "An agent on an SDK runs its tools without telling streamfsm (there is no run to call tool_started on),"
    " so the tap cannot know one started: a cut while a tool runs reads as a cut before it ran. After an"
    " effectful tool that is a retry the tap calls safe where open_stream refuses it; declaring tool effects"
    " needs open_stream or wrap()."
)

TAP_DIFFERENCES: Final[tuple[Difference, ...]] = (
    Difference(
        "*/user-abort",
        "An agent on an SDK has no run.abort(): pressing stop ends its loop and closes the SDK's stream,"
        " which the tap sees as the consumer stopping early.",
        {"expected_cause": "consumer_stopped"},
    ),
    Difference(
        "*/consumer-error",
        "An exception in the agent's own loop body never reaches the transport: the tap sees only the SDK"
        " closing the response before its end, as a consumer that stopped early.",
        {
            "expected_class": FailureClass.LOCAL_ABORT,
            "expected_edge": Trigger.LOCAL_ABORT,
            "expected_cause": "consumer_stopped",
            "expected_action": Action.NONE,
        },
    ),
    Difference(
        "*/effectful-tool-running-then-fin",
        _TOOLS_UNSEEN,
        {
            "expected_class": FailureClass.TOOL_CALL_INTERRUPTED,
            "expected_verdict": Verdict.SAFE_AUTO_RETRY,
            "expected_phase": Phase.TOOL_CALL,
            "expected_action": Action.RETRY,
        },
    ),
    Difference("*/read-only-tool-running-then-rst", _TOOLS_UNSEEN, {"expected_phase": Phase.TOOL_CALL}),
    Difference(
        "*/parallel-effectful-then-args-cut",
        _TOOLS_UNSEEN,
        {"expected_verdict": Verdict.SAFE_AUTO_RETRY, "expected_action": Action.RETRY},
    ),
)
"""Every documented difference between what a tap path sees and what ``open_stream`` sees, with its reason:
the table the tap paths of `run_scenario` and `run_catalog` read records with, and ``streamfsm harness
--via tap`` prints."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One scenario played once: what the run record says, and whether it is what the scenario expects."""

    name: str
    format: str | None
    via: str  # "runtime", or the SDK's name ("openai", "anthropic")
    state: str | None  # the final state, e.g. "failed/visible"
    edge: Trigger | None
    failure_class: FailureClass | None
    verdict: Verdict | None
    action: Action | None
    phase: Phase | None
    cause: str | None
    title: str
    matched: bool
    mismatch: str | None  # what differs, in one line; None when matched
    record: RunRecord | None
    seconds: float  # how long the run took
    started: float = 0.0  # when it started (time.monotonic()), to see how runs overlapped
    differences: tuple[Difference, ...] = ()  # the documented differences the expectation was read with

    def row(self) -> dict[str, str]:
        """The outcome as the strings of a table row."""
        return {
            "scenario": self.name,
            "via": self.via,
            "format": _text(self.format),
            "state": _text(self.state),
            "edge": _text(self.edge),
            "class": _text(self.failure_class),
            "verdict": _text(self.verdict),
            "action": _text(self.action),
            "title": self.title,
        }


# -- one run ------------------------------------------------------------------------------------------------


class _AgentError(Exception):
    """The agent's own error, raised inside the loop when a scenario says ``raise_on``."""


class _Role:
    """Plays an `Agent` against one run."""

    __slots__ = ("_agent", "_fired", "_outside")

    def __init__(self, agent: Agent, outside: anyio.CancelScope) -> None:
        self._agent = agent
        self._outside = outside
        self._fired: set[str] = set()

    def _once(self, what: str, wanted: Trigger | None, trigger: Trigger) -> bool:
        if wanted is None or wanted is not trigger or what in self._fired:
            return False
        self._fired.add(what)
        return True

    def on_event(self, run: Run, event: Any) -> bool:
        """React to one event; True to leave the loop."""
        agent = self._agent
        if isinstance(event, ToolCall):
            effect = agent.tools.get(event.name)
            if effect is not None:
                run.tool_started(event.call_id, effect)
        trigger: Trigger = event.trigger
        if self._once("abort", agent.abort_on, trigger):
            run.abort(agent.abort_reason, source=agent.abort_source)
        if self._once("cancel", agent.cancel_on, trigger):
            self._outside.cancel()
        if self._once("raise", agent.raise_on, trigger):
            raise _AgentError("the agent's own error (scenario raise_on)")
        return self._once("stop", agent.stop_on, trigger)


async def _drive(run: Run, agent: Agent) -> None:
    """Enter and iterate ``run`` as the agent would; every ending is left in ``run.record``."""
    with anyio.CancelScope() as outside:
        role = _Role(agent, outside)
        try:
            async with run:
                async for event in run:
                    if role.on_event(run, event):
                        break
        except (StreamFailed, _AgentError):
            pass


def _tap_sdk(path: str | None) -> str | None:
    """The SDK of tap path ``path`` ("tap:openai" -> "openai"); None for any other path."""
    if path is not None and path.startswith(TAP_PREFIX):
        return path[len(TAP_PREFIX) :]
    return None


def _speaker(path: str) -> str:
    """The SDK that plays path ``path`` (an SDK name, or a tap path)."""
    return _tap_sdk(path) or path


def sdk_available(sdk: str) -> str | None:
    """None when the SDK path ``sdk`` (an SDK name, or a tap path such as "tap:openai") can run here, else
    why not (for a skip message)."""
    name = _speaker(sdk)
    if name not in SDK_FORMATS:
        known = ", ".join((*SDK_FORMATS, *TAP_PATHS))
        return f"unknown SDK path {sdk!r}; expected one of {known}"
    if importlib.util.find_spec(name) is None:
        return f"the {name} SDK is not installed (pip install {name})"
    if _tap_sdk(sdk) is None:
        if name not in WRAPPED_SDKS:
            return f"wrap() takes no {name} stream: play it through tap:{name}"
        if importlib.util.find_spec("streamfsm.runtime.drivers._sdk") is None:
            return "streamfsm.wrap() is not available in this version"
        return None
    if importlib.util.find_spec("streamfsm.tap") is None:
        return "the transport tap (streamfsm.tap) is not available in this version"
    return None


def _sdk_http(module: Any) -> Any:
    """The HTTP library (httpx or httpx2) the SDK ``module`` is built on."""
    return importlib.import_module(module.DefaultAsyncHttpxClient.__mro__[1].__module__.partition(".")[0])


def _sdk_class(sdk: str, module: Any) -> Any:
    return module.AsyncOpenAI if sdk == "openai" else module.AsyncAnthropic


_API_KEYS: Final = {"openai": "sk-test", "anthropic": "sk-ant-test"}


def _sdk_call(sdk: str, fmt: str, client: Any, *, streaming: bool = True, generate: bool = False) -> Any:
    """The SDK's streaming call for ``fmt`` (or its non-streaming one), not yet awaited (``wrap()`` takes it
    as it is). ``generate``: Ollama's ``/api/generate`` rather than its chat."""
    kit = kit_of(fmt) if fmt in WIRE else None
    if kit is None or kit.sdk_call is None or kit.harness_sdk != sdk:
        raise ValueError(f"the {sdk} SDK does not speak {fmt}")
    return kit.sdk_call(client, dict(kit.body), streaming, generate)


def sdk_client(sdk: str, base_url: str = "http://127.0.0.1:9") -> Any:
    """An async client of SDK ``sdk`` fit for fault runs: no retries, no keep-alive, no proxy from the
    environment. `run_scenario` gives each run a copy of it with the scenario's base URL; close it after."""
    module = importlib.import_module(sdk)
    # The SDKs bring their own httpx generation (httpx2): build the limits with the module they use.
    http = _sdk_http(module)
    # No keep-alive: each scenario gets its own connection, as with our own client. trust_env=False: a proxy
    # from the environment must never see loopback fault traffic.
    limits = http.Limits(max_connections=None, max_keepalive_connections=0)
    transport = module.DefaultAsyncHttpxClient(limits=limits, trust_env=False, timeout=DEFAULT_TIMEOUT_S)
    client = _sdk_class(sdk, module)(
        base_url=base_url, api_key=_API_KEYS[sdk], max_retries=0, http_client=transport
    )
    return _primed(sdk, client)


@functools.cache
def _tls() -> ssl.SSLContext:
    # One context for every tap client: each would otherwise load the CA bundle again (~20 ms), for loopback.
    return ssl.create_default_context()


def tap_client(sdk: str, base_url: str, config: StreamConfig | None = None) -> Any:
    """An async client of SDK ``sdk`` on a tap client (``streamfsm.async_http_client``, of the HTTP library
    the SDK is built on) whose every stream runs with ``config``: no SDK retries, no keep-alive, no proxy from
    the environment, and the SDK's own timeout `TAP_SDK_TIMEOUT_S`. Close it after."""
    from .. import tap  # lazily: the tap is needed only on this path

    module = importlib.import_module(sdk)
    if sdk == "ollama":  # its client takes httpx's arguments: the tap is its transport
        inner = httpx.AsyncHTTPTransport(
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0), trust_env=False
        )
        tapped_transport = tap.async_transport(inner, http="httpx", config=config)
        return module.AsyncClient(
            host=base_url, transport=tapped_transport, timeout=TAP_SDK_TIMEOUT_S, trust_env=False
        )
    http = _sdk_http(module)
    limits = http.Limits(max_connections=None, max_keepalive_connections=0)
    tapped = tap.async_http_client(
        http=http.__name__, config=config, limits=limits, trust_env=False, verify=_tls()
    )
    client = _sdk_class(sdk, module)(
        base_url=base_url,
        api_key=_API_KEYS[sdk],
        max_retries=0,
        timeout=TAP_SDK_TIMEOUT_S,
        http_client=tapped,
    )
    return _primed(sdk, client)


def _primed(sdk: str, client: Any) -> Any:
    """``client``, with the platform its telemetry headers name already looked up.

    On its first request an async SDK client looks the platform up in a worker thread (it may block), and on
    trio that thread then idles in trio's global thread cache, outliving the run. Looked up here, once,
    synchronously, no thread is started. Best effort: an SDK without that attribute is left as it is.
    """
    if getattr(client, "_platform", False) is None:
        with contextlib.suppress(ImportError, AttributeError):
            client._platform = importlib.import_module(f"{sdk}._base_client").get_platform()
    return client


async def _sdk_run(
    scenario: Scenario, sdk: str, url: str, config: StreamConfig, ids: Ids, shared: Any, runs: list[Run]
) -> None:
    from ..runtime import wrap  # lazily: the SDK drop-in is needed only on this path

    # A copy shares the shared client's connection pool; it must not close it.
    client = _primed(sdk, shared.with_options(base_url=url)) if shared is not None else sdk_client(sdk, url)
    try:
        run: Run = wrap(_sdk_call(sdk, scenario.format or "", client), config=config, ids=ids)
        runs.append(run)
        await _drive(run, scenario.agent)
    finally:
        if shared is None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await client.close()


class _SdkRole(_Role):
    """Plays an `Agent` with only what an agent on an SDK has: the SDK's items, its stream, the scope around
    it. Tools run without streamfsm hearing of it, and stopping (``abort_on``, ``stop_on``) is leaving the
    loop, after which the stream is closed. Only ``text_delta`` (the SDK's first text item) is recognised."""

    __slots__ = ("_format",)

    PLAYABLE: Final = frozenset({Trigger.TEXT_DELTA})

    def __init__(self, agent: Agent, outside: anyio.CancelScope, fmt: str) -> None:
        super().__init__(agent, outside)
        self._format = fmt

    @classmethod
    def unplayable(cls, agent: Agent) -> str | None:
        """Why ``agent`` cannot be played on an SDK's items, or None."""
        for name in ("abort_on", "cancel_on", "stop_on", "raise_on"):
            trigger = getattr(agent, name)
            if trigger is not None and trigger not in cls.PLAYABLE:
                return f"the tap path plays {name} only on text_delta, not {trigger.value}"
        return None

    def on_item(self, item: Any) -> bool:
        """React to one SDK item; True to leave the loop."""
        if not _shows_text(self._format, item):
            return False
        agent, trigger = self._agent, Trigger.TEXT_DELTA
        stop = self._once("abort", agent.abort_on, trigger)
        if self._once("cancel", agent.cancel_on, trigger):
            self._outside.cancel()
        if self._once("raise", agent.raise_on, trigger):
            raise _AgentError("the agent's own error (scenario raise_on)")
        return self._once("stop", agent.stop_on, trigger) or stop


def _shows_text(fmt: str, item: Any) -> bool:
    """True when the SDK item ``item`` carries visible text."""
    shows = kit_of(fmt).shows_text
    return shows is not None and shows(item)


async def _tap_run(
    scenario: Scenario, sdk: str, url: str, config: StreamConfig, raised: list[Exception]
) -> None:
    """Play ``scenario`` as an agent on SDK ``sdk`` would, over a tap client whose runs have ``config``; what
    the SDK raised to the agent goes to ``raised``."""
    from ..tap import failure_of

    fmt = scenario.format or ""
    generate = "/generate-" in scenario.name  # an Ollama /api/generate scenario: its lines carry "response"
    client = tap_client(sdk, url, config)
    try:
        with anyio.CancelScope() as outside:
            role = _SdkRole(scenario.agent, outside, fmt)
            stream: Any = None
            try:
                if not scenario.streaming:  # one JSON answer: the SDK's call returns it whole
                    await _sdk_call(sdk, fmt, client, streaming=False, generate=generate)
                    return
                stream = await _sdk_call(sdk, fmt, client, generate=generate)
                async for item in stream:
                    if role.on_item(item):
                        break
            except _AgentError:
                pass
            except Exception as exc:  # the SDK's own error, as the agent gets it
                failure_of(exc)  # asked where the agent catches it, in its context() block
                raised.append(exc)
            finally:
                if stream is not None:  # as `async with stream` would, even when cancelled
                    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                        await (stream.aclose() if hasattr(stream, "aclose") else stream.close())
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            # an older Ollama client (0.4.0) has no close(): its httpx client is closed instead
            await (client.close() if hasattr(client, "close") else client._client.aclose())


def _tap_problems(
    records: Sequence[RunRecord], raised: Sequence[Exception], differences: Iterable[Difference]
) -> list[str]:
    """What is wrong with the tap's side of a run, whatever the scenario: the tap hands its sinks exactly one
    record, and the error the SDK raised to the agent carries that record's failure (``failure_of``), unless a
    documented difference says it cannot."""
    from ..tap import failure_of

    if len(records) != 1:
        return [f"the tap handed its sinks {len(records)} records, not one"]
    if not raised:
        return []
    name = type(raised[0]).__name__
    found = failure_of(raised[0])
    if found is not None and found.record["ids"]["run_id"] != records[0]["ids"]["run_id"]:
        return [f"the SDK's {name} carries another run's diagnosis"]
    if all(d.carried for d in differences):
        return [] if found is not None else [f"the SDK's {name} carries no diagnosis (failure_of found none)"]
    return [f"documented: the SDK's {name} carries no diagnosis, yet failure_of found it"] if found else []


def _expectation(
    scenario: Scenario, sdk: str, differences: Iterable[Difference]
) -> tuple[Scenario, tuple[Difference, ...]]:
    """``scenario`` with the expectation the tap path of ``sdk`` must meet, and the differences applied."""
    applied = tuple(d for d in differences if d.applies(scenario, sdk))
    expect: dict[str, Any] = {}
    for difference in applied:
        expect.update(difference.expect)
    return (dataclasses.replace(scenario, **expect), applied) if applied else (scenario, ())


async def run_scenario(
    scenario: Scenario,
    *,
    base_url: str | None = None,
    sdk: str | None = None,
    client: httpx.AsyncClient | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    config: StreamConfig | None = None,
    sdk_client: Any = None,
    differences: Iterable[Difference] = TAP_DIFFERENCES,
) -> Outcome:
    """Play ``scenario`` once and compare its record with the expectation.

    ``base_url`` is the root URL of a fault server whose router serves this scenario (a `ScenarioRouter`);
    it may be None for a ``no_listener`` scenario. ``sdk`` picks a provider SDK path through ``wrap()``
    ("openai" or "anthropic") instead of our own client, or a tap path (`TAP_PATHS`, e.g. "tap:openai"): the
    SDK's own iteration over a tap client (`tap_client`, one per run), whose record is read with the
    ``differences`` that apply to it (default `TAP_DIFFERENCES`). ``client`` is an httpx client to share
    (left open). ``config`` is the base `StreamConfig` (sinks, bounds) that the scenario's own ``config``
    overrides. ``sdk_client``: an SDK client to share on a ``wrap()`` path (see `sdk_client`); by default
    each SDK run makes its own. The run is bounded by ``timeout`` seconds on top of its watchdogs. Starts no
    server of its own.
    """
    fmt = scenario.format
    if fmt is None or fmt not in BODIES:
        raise ValueError(f"scenario {scenario.name!r} names no wire format the harness can speak ({fmt!r})")
    if scenario.no_listener:
        url = f"http://127.0.0.1:{unused_port()}"
    elif base_url is None:
        raise ValueError(f"scenario {scenario.name!r} needs a fault server: pass base_url")
    else:
        url = scenario_url(base_url, scenario.name)
    if scenario.meta.get("transport") == "websocket":
        if sdk is not None:
            raise ValueError(
                f"scenario {scenario.name!r} is played over a WebSocket: only the runtime plays it"
            )
        url = "ws" + url[len("http") :]
    tapped = _tap_sdk(sdk)
    if not scenario.streaming and tapped is None:
        raise ValueError(f"scenario {scenario.name!r} is a non-streaming call: only a tap path plays it")
    if sdk is not None:
        if fmt not in SDK_FORMATS.get(_speaker(sdk), ()):
            raise ValueError(f"the {_speaker(sdk)} SDK does not speak {fmt} (scenario {scenario.name!r})")
        why = sdk_available(sdk)
        if why is not None:
            raise SdkUnavailable(why)
    config = (config or StreamConfig()).replace(**scenario.config)
    # The scenario's name travels in the record, so exported records say which scenario made them.
    context = {"scenario": scenario.name, "harness_path": sdk or "runtime"}
    ids = Ids(context=context)
    started = time.monotonic()
    runs: list[Run] = []
    records: list[RunRecord] = []
    raised: list[Exception] = []
    problems: list[str] = []
    expected: Scenario = scenario
    applied: tuple[Difference, ...] = ()
    if tapped is not None:
        expected, applied = _expectation(scenario, tapped, differences)
        unplayable = _SdkRole.unplayable(scenario.agent)
        if unplayable is not None:
            problems.append(unplayable)
    try:
        with anyio.fail_after(timeout):
            if sdk is None and scenario.meta.get("transport") == "websocket":
                await _websocket_runs(scenario, url, config, ids, runs)
            elif sdk is None:
                run = open_stream(fmt, base_url=url, json=BODIES[fmt], client=client, config=config, ids=ids)
                runs.append(run)
                await _drive(runs[0], scenario.agent)
            elif tapped is not None:
                from ..tap import context as tap_context

                with tap_context(**context):
                    await _tap_run(
                        scenario, tapped, url, config.replace(sinks=(*config.sinks, records.append)), raised
                    )
            else:
                await _sdk_run(scenario, sdk, url, config, ids, sdk_client, runs)
    except TimeoutError:
        problems.append(f"the run did not end within the harness bound of {timeout:g} s")
    seconds = time.monotonic() - started
    if tapped is not None:
        problems += _tap_problems(records, raised, applied)
        record = records[0] if records else None
    else:
        record = runs[0].record if runs else None
    return _outcome(expected, sdk or "runtime", record, problems, started, seconds, applied)


# -- comparing ----------------------------------------------------------------------------------------------


def _enum(kind: Any, value: object) -> Any:
    try:
        return kind(value) if value is not None else None
    except ValueError:
        return None


def _differences(scenario: Scenario, record: RunRecord) -> list[str]:
    outcome, retry, summary = record["outcome"], record["retry"], record["summary"]
    problems: list[str] = []

    def check(what: str, expected: object, actual: object) -> None:
        expected = getattr(expected, "value", expected)
        if expected != actual:
            problems.append(f"{what}: expected {expected}, got {actual}")

    if scenario.expected_class is not None:
        check("class", scenario.expected_class, outcome["class"])
        check("edge", scenario.expected_edge, outcome["edge"])
    if scenario.expected_verdict is not None:
        check("verdict", scenario.expected_verdict, retry["verdict"])
    if scenario.expected_phase is not None:
        check("phase", scenario.expected_phase, outcome["phase"])
    if scenario.expected_cause is not None:
        check("cause", scenario.expected_cause, outcome["cause"])
    if scenario.expected_action is not None:
        check("action", scenario.expected_action, retry["action"])
    if scenario.expected_retry_after_s is not None:
        actual = retry["retry_after_s"]
        if actual is None or not math.isclose(
            actual, scenario.expected_retry_after_s, abs_tol=RETRY_AFTER_TOLERANCE_S
        ):
            problems.append(f"retry_after_s: expected {scenario.expected_retry_after_s}, got {actual}")
    # Truths that hold for every run, whatever the scenario.
    completed = outcome["class"] == FailureClass.COMPLETED.value
    if not str(outcome["state"]).startswith("finished/" if completed else "failed/"):
        problems.append(f"state {outcome['state']} does not match class {outcome['class']}")
    text = f"{summary['title']} {summary['detail']}"
    raw = [s for s in RAW_TRANSPORT_STRINGS if s in text]
    if raw:
        problems.append(f"raw transport text in the summary: {raw}")
    return problems


def _outcome(
    scenario: Scenario,
    via: str,
    record: RunRecord | None,
    problems: list[str],
    started: float,
    seconds: float,
    differences: tuple[Difference, ...] = (),
) -> Outcome:
    problems = list(problems)
    if record is None:
        problems.append("the run left no record")
        outcome: Mapping[str, Any] = {}
        retry: Mapping[str, Any] = {}
        title = ""
    else:
        problems += _differences(scenario, record)
        outcome, retry, title = record["outcome"], record["retry"], record["summary"]["title"]
    return Outcome(
        name=scenario.name,
        format=scenario.format,
        via=via,
        state=outcome.get("state"),
        edge=_enum(Trigger, outcome.get("edge")),
        failure_class=_enum(FailureClass, outcome.get("class")),
        verdict=_enum(Verdict, retry.get("verdict")),
        action=_enum(Action, retry.get("action")),
        phase=_enum(Phase, outcome.get("phase")),
        cause=outcome.get("cause"),
        title=title,
        matched=not problems,
        mismatch="; ".join(problems) or None,
        record=record,
        seconds=seconds,
        started=started,
        differences=differences,
    )


def peak_in_flight(outcomes: Iterable[Outcome]) -> int:
    """The most runs that were in flight at once, from the outcomes' start times and durations."""
    edges = sorted((t, step) for o in outcomes for t, step in ((o.started, 1), (o.started + o.seconds, -1)))
    peak = current = 0
    for _, step in edges:
        current += step
        peak = max(peak, current)
    return peak


# -- many runs ----------------------------------------------------------------------------------------------

_WARM_UP_PREFIX: Final = "warm-up/"


def _warm_ups(jobs: Iterable[tuple[Scenario, str | None]]) -> list[tuple[Scenario, str]]:
    """Unmeasured streams that a tap path plays first, one at a time, per format it will play.

    An SDK builds the parsers of its items on first use (the openai SDK's Responses events take seconds on a
    slow machine), synchronously: with runs in flight, that would block the loop past their watchdogs and the
    SDK's own timeout, and the outcomes would measure the SDK's start-up rather than the stream."""
    wanted: dict[tuple[str, Format], None] = {}
    for scenario, path in jobs:
        tapped = _tap_sdk(path)
        if path is not None and tapped is not None and scenario.format in SDK_FORMATS[tapped]:
            wanted[path, cast(Format, scenario.format)] = None
    out: list[tuple[Scenario, str]] = []
    for path, fmt in wanted:
        shapes = cast(tuple[_ErrorShape, ...], kit_of(fmt).error_shapes)
        streams = [
            text_stream(fmt, ["Hi"], reasoning=["Hm"]),
            tool_call_stream(fmt, [("read_file", '{"path": "a"}'), ("write_file", "{}")], text=["Hi"]),
            *([error_event(fmt, shape=shape)] for shape in shapes),
        ]
        for index, frames in enumerate(streams):
            script: tuple[Step, ...] = (Headers(), *(Send(frame) for frame in frames), End())
            out.append((Scenario(f"{_WARM_UP_PREFIX}{path}/{fmt}/{index}", script, format=fmt), path))
    return out


Progress = Callable[[int, int, Outcome], None]
"""``progress(done, total, outcome)``, called as each run ends."""


async def _websocket_runs(
    scenario: Scenario, url: str, config: StreamConfig, ids: Ids, runs: list[Run]
) -> None:
    """A WebSocket scenario: ``meta["responses"]`` runs (1 unless told) one after another on one connection;
    the agent plays its part in the last one, whose record is checked."""
    from ..runtime import WebSocketConnection, websocket_url

    fmt = scenario.format
    assert fmt is not None
    count = scenario.meta.get("responses", 1)
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"scenario {scenario.name!r}: meta['responses'] must be a positive count")
    async with WebSocketConnection(
        websocket_url(fmt, url), max_message_bytes=config.max_line_bytes
    ) as shared:
        for index in range(count):
            run = open_stream(fmt, base_url=url, json=BODIES[fmt], client=shared, config=config, ids=ids)
            runs.insert(0, run)  # the last run first: its record is the one compared
            if index < count - 1:
                async with run:
                    async for _ in run:
                        pass
            else:
                await _drive(run, scenario.agent)


def _paths(sdk: str | Sequence[str | None] | None) -> list[str | None]:
    if sdk is None or isinstance(sdk, str):
        return [sdk]
    return list(dict.fromkeys(sdk))


def plan(
    scenarios: Iterable[Scenario], sdk: str | Sequence[str | None] | None = None
) -> list[tuple[Scenario, str | None]]:
    """The (scenario, path) pairs `run_catalog` plays: every streaming scenario through the runtime (``None``)
    and through each SDK path (``wrap()`` or tap) whose SDK speaks its format; a non-streaming one through
    the tap paths only."""
    jobs: list[tuple[Scenario, str | None]] = []
    paths = _paths(sdk)
    for path in paths:
        for scenario in scenarios:
            if not scenario.streaming and _tap_sdk(path) is None:
                continue  # a non-streaming call: only a tap path plays it
            if path is not None and scenario.meta.get("transport") == "websocket":
                continue  # over a WebSocket: the runtime's own source plays it, no SDK path
            if path is None or scenario.format in SDK_FORMATS.get(_speaker(path), ()):
                jobs.append((scenario, path))
    return jobs


def http_client() -> httpx.AsyncClient:
    """An httpx client fit for fault runs: no keep-alive (each run gets its own connection, so a fault never
    lands on a reused one), no connection cap, no proxy from the environment."""
    return httpx.AsyncClient(
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=0), trust_env=False
    )


async def run_catalog(
    scenarios: Iterable[Scenario],
    *,
    sdk: str | Sequence[str | None] | None = None,
    concurrency: int = 64,
    progress: Progress | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    config: StreamConfig | None = None,
    differences: Iterable[Difference] = TAP_DIFFERENCES,
) -> list[Outcome]:
    """Start one fault server, play every scenario on it (at most ``concurrency`` at a time) and return the
    outcomes in the order of the plan.

    ``sdk``: None for the runtime path; an SDK name ("openai", "anthropic") for its ``wrap()`` path, or a
    tap path ("tap:openai", "tap:anthropic", "tap:ollama", `TAP_PATHS`); or a sequence mixing them, e.g.
    ``(None, "openai", "anthropic")`` for the runtime and both SDKs through ``wrap()``, or ``TAP_PATHS`` for
    every SDK through the tap. An SDK path plays only the scenarios of the formats it speaks; an SDK that
    cannot run here raises `SdkUnavailable` before anything starts. ``config``: the base `StreamConfig` for
    every run (see `run_scenario`); ``differences``: the documented differences the tap paths' records are
    read with.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    scenarios = list(scenarios)
    for path in _paths(sdk):
        if path is not None:
            why = sdk_available(path)
            if why is not None:
                raise SdkUnavailable(why)
    jobs = plan(scenarios, sdk)
    results: list[Outcome | None] = [None] * len(jobs)
    limiter = anyio.CapacityLimiter(concurrency)
    done = 0
    # Clients are shared, but each by a few runs at a time only: a connection pool's bookkeeping grows with
    # the connections it holds (httpcore scans them all on every request), so one pool for a thousand runs
    # in flight would measure the pool, not the runs.
    shards = -(-min(concurrency, max(1, len(jobs))) // RUNS_PER_CLIENT)
    http_clients = [http_client() for _ in range(shards)]
    sdk_clients = {  # the wrap() paths share clients; a tap path makes one per run (its config is the run's)
        path: [sdk_client(path) for _ in range(shards)]
        for path in _paths(sdk)
        if path is not None and _tap_sdk(path) is None
    }
    differences = tuple(differences)
    load = [0] * shards

    async def one(index: int, scenario: Scenario, path: str | None) -> None:
        nonlocal done
        async with limiter:
            shard = min(range(shards), key=load.__getitem__)
            load[shard] += 1
            try:
                outcome = await run_scenario(
                    scenario,
                    base_url=server.base_url,
                    sdk=path,
                    client=http_clients[shard],
                    timeout=timeout,
                    config=config,
                    sdk_client=sdk_clients[path][shard] if path in sdk_clients else None,
                    differences=differences,
                )
            finally:
                load[shard] -= 1
        results[index] = outcome
        done += 1
        if progress is not None:
            progress(done, len(jobs), outcome)

    warm = _warm_ups(jobs)
    router = ScenarioRouter([*scenarios, *(scenario for scenario, _ in warm)])
    try:
        async with FaultServer(router, max_records=max(1000, len(jobs) + len(warm))) as server:
            for scenario, path in warm:  # one at a time, before any run is measured; their outcomes are not
                await run_scenario(scenario, base_url=server.base_url, sdk=path, timeout=timeout)
            async with anyio.create_task_group() as group:
                for index, (scenario, path) in enumerate(jobs):
                    group.start_soon(one, index, scenario, path)
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            for client in http_clients:
                await client.aclose()
            for clients in sdk_clients.values():
                for shared in clients:
                    await shared.close()
    return [outcome for outcome in results if outcome is not None]
