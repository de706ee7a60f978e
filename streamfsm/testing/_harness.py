"""The harness: play scenarios against the fault server through the runtime (or an SDK and ``wrap()``), with
the agent's part played as each scenario says, and compare every run record with the scenario's expectation.

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
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote, unquote

import anyio
import httpx

from ..classify import Action, FailureClass, Phase, Verdict
from ..machine import Trigger
from ..runtime import Ids, RunRecord, StreamConfig, StreamFailed, ToolCall, open_stream
from ..runtime._stream import Run
from ._script import Agent, Scenario, Script, unused_port
from ._server import FaultServer, Request

__all__ = [
    "BODIES",
    "DEFAULT_TIMEOUT_S",
    "RAW_TRANSPORT_STRINGS",
    "SCENARIO_HEADER",
    "SDK_FORMATS",
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
]

SCENARIO_PREFIX: Final = "/scenario/"
SCENARIO_HEADER: Final = "x-streamfsm-scenario"
DEFAULT_TIMEOUT_S: Final = 10.0
RETRY_AFTER_TOLERANCE_S: Final = 0.01
RUNS_PER_CLIENT: Final = 32  # runs in flight per shared HTTP client in `run_catalog`
SDK_FORMATS: Final[Mapping[str, tuple[str, ...]]] = {
    "openai": ("openai-chat", "openai-responses"),
    "anthropic": ("anthropic",),
}
"""The formats each SDK speaks; a scenario of another format has no SDK path."""

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

BODIES: Final[Mapping[str, Mapping[str, Any]]] = {
    "openai-chat": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
    "openai-responses": {"model": "gpt-5-mini", "input": "hi"},
    "anthropic": {
        "model": "claude-haiku-4-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
    },
    "gemini": {"model": "gemini-2.5-flash", "contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
}
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

    def __call__(self, request: Request) -> Script:
        name: str | None = None
        if request.path.startswith(SCENARIO_PREFIX):
            name = unquote(request.path[len(SCENARIO_PREFIX) :].partition("/")[0])
        else:
            name = request.header(SCENARIO_HEADER)
        if name is None:
            if self.default is None:
                raise LookupError(f"request for {request.path!r} names no scenario and there is no default")
            return self.default.script
        try:
            return self._scenarios[name].script
        except KeyError:
            raise LookupError(f"no scenario registered as {name!r}") from None


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

    def row(self) -> dict[str, str]:
        """The outcome as the strings of a table row."""

        def text(value: object) -> str:
            if value is None:
                return "-"
            return str(getattr(value, "value", value))

        return {
            "scenario": self.name,
            "via": self.via,
            "format": text(self.format),
            "state": text(self.state),
            "edge": text(self.edge),
            "class": text(self.failure_class),
            "verdict": text(self.verdict),
            "action": text(self.action),
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


def sdk_available(sdk: str) -> str | None:
    """None when the SDK path ``sdk`` can run here, else why not (for a skip message)."""
    if sdk not in SDK_FORMATS:
        return f"unknown SDK {sdk!r}; expected one of {', '.join(SDK_FORMATS)}"
    if importlib.util.find_spec(sdk) is None:
        return f"the {sdk} SDK is not installed (pip install {sdk})"
    if importlib.util.find_spec("streamfsm.runtime._sdk") is None:
        return "streamfsm.wrap() is not available in this version"
    return None


def _sdk_call(sdk: str, fmt: str, client: Any) -> Any:
    """The SDK's streaming call for ``fmt``, not yet awaited (``wrap()`` takes it as it is)."""
    body = dict(BODIES[fmt])
    if sdk == "openai" and fmt == "openai-chat":
        return client.chat.completions.create(**body, stream=True, stream_options={"include_usage": True})
    if sdk == "openai" and fmt == "openai-responses":
        return client.responses.create(**body, stream=True)
    if sdk == "anthropic" and fmt == "anthropic":
        return client.messages.create(**body, stream=True)
    raise ValueError(f"the {sdk} SDK does not speak {fmt}")


def sdk_client(sdk: str, base_url: str = "http://127.0.0.1:9") -> Any:
    """An async client of SDK ``sdk`` fit for fault runs: no retries, no keep-alive, no proxy from the
    environment. `run_scenario` gives each run a copy of it with the scenario's base URL; close it after."""
    module = importlib.import_module(sdk)
    # The SDKs bring their own httpx generation (httpx2): build the limits with the module they use.
    http = importlib.import_module(module.DefaultAsyncHttpxClient.__mro__[1].__module__.partition(".")[0])
    # No keep-alive: each scenario gets its own connection, as with our own client. trust_env=False: a proxy
    # from the environment must never see loopback fault traffic.
    limits = http.Limits(max_connections=None, max_keepalive_connections=0)
    transport = module.DefaultAsyncHttpxClient(limits=limits, trust_env=False, timeout=DEFAULT_TIMEOUT_S)
    if sdk == "openai":
        client = module.AsyncOpenAI(
            base_url=base_url, api_key="sk-test", max_retries=0, http_client=transport
        )
    else:
        client = module.AsyncAnthropic(
            base_url=base_url, api_key="sk-ant-test", max_retries=0, http_client=transport
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
    from ..runtime._sdk import wrap  # lazily: the SDK drop-in is needed only on this path

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


async def run_scenario(
    scenario: Scenario,
    *,
    base_url: str | None = None,
    sdk: str | None = None,
    client: httpx.AsyncClient | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    config: StreamConfig | None = None,
    sdk_client: Any = None,
) -> Outcome:
    """Play ``scenario`` once and compare its record with the expectation.

    ``base_url`` is the root URL of a fault server whose router serves this scenario (a `ScenarioRouter`);
    it may be None for a ``no_listener`` scenario. ``sdk`` picks a provider SDK path through ``wrap()``
    ("openai" or "anthropic") instead of our own client; ``client`` is an httpx client to share (left open).
    ``config`` is the base `StreamConfig` (sinks, bounds) that the scenario's own ``config`` overrides.
    ``sdk_client``: an SDK client to share (see `sdk_client`); by default each SDK run makes its own. The
    run is bounded by ``timeout`` seconds on top of its watchdogs. Starts no server of its own.
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
    if sdk is not None:
        if fmt not in SDK_FORMATS.get(sdk, ()):
            raise ValueError(f"the {sdk} SDK does not speak {fmt} (scenario {scenario.name!r})")
        why = sdk_available(sdk)
        if why is not None:
            raise SdkUnavailable(why)
    config = (config or StreamConfig()).replace(**scenario.config)
    # The scenario's name travels in the record, so exported records say which scenario made them.
    ids = Ids(context={"scenario": scenario.name, "harness_path": sdk or "runtime"})
    started = time.monotonic()
    runs: list[Run] = []
    problem: str | None = None
    try:
        with anyio.fail_after(timeout):
            if sdk is None:
                run = open_stream(fmt, base_url=url, json=BODIES[fmt], client=client, config=config, ids=ids)
                runs.append(run)
                await _drive(runs[0], scenario.agent)
            else:
                await _sdk_run(scenario, sdk, url, config, ids, sdk_client, runs)
    except TimeoutError:
        problem = f"the run did not end within the harness bound of {timeout:g} s"
    seconds = time.monotonic() - started
    record = runs[0].record if runs else None
    return _outcome(scenario, sdk or "runtime", record, problem, started, seconds)


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
    problem: str | None,
    started: float,
    seconds: float,
) -> Outcome:
    problems = [problem] if problem else []
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

Progress = Callable[[int, int, Outcome], None]
"""``progress(done, total, outcome)``, called as each run ends."""


def _paths(sdk: str | Sequence[str | None] | None) -> list[str | None]:
    if sdk is None or isinstance(sdk, str):
        return [sdk]
    return list(dict.fromkeys(sdk))


def plan(
    scenarios: Iterable[Scenario], sdk: str | Sequence[str | None] | None = None
) -> list[tuple[Scenario, str | None]]:
    """The (scenario, path) pairs `run_catalog` plays: every scenario through the runtime (``None``) and
    through each SDK that speaks its format and can play it."""
    jobs: list[tuple[Scenario, str | None]] = []
    paths = _paths(sdk)
    for path in paths:
        for scenario in scenarios:
            if path is None or scenario.format in SDK_FORMATS.get(path, ()):
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
) -> list[Outcome]:
    """Start one fault server, play every scenario on it (at most ``concurrency`` at a time) and return the
    outcomes in the order of the plan.

    ``sdk``: None for the runtime path; an SDK name ("openai", "anthropic"); or a sequence mixing them,
    e.g. ``(None, "openai", "anthropic")`` for the runtime and both SDKs. An SDK path plays only the scenarios
    of the formats it speaks; an SDK that cannot run here raises `SdkUnavailable` before anything starts.
    ``config``: the base `StreamConfig` for every run (see `run_scenario`).
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
    sdk_clients = {
        path: [sdk_client(path) for _ in range(shards)] for path in _paths(sdk) if path is not None
    }
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
                    sdk_client=sdk_clients[path][shard] if path is not None else None,
                )
            finally:
                load[shard] -= 1
        results[index] = outcome
        done += 1
        if progress is not None:
            progress(done, len(jobs), outcome)

    router = ScenarioRouter(scenarios)
    try:
        async with (
            FaultServer(router, max_records=max(1000, len(jobs))) as server,
            anyio.create_task_group() as group,
        ):
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
