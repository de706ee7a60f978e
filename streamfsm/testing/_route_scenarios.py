"""Route scenarios: misbehaving providers behind an ordered list of routes, each scenario scored on what the
caller finally got and on how each provider was treated, read from that provider's own request log.

Unlike a catalog `Scenario` (one script, one run), a `RouteScenario` gives every route a fault server of its
own (`Provider`: the script it plays per request, and an outage of ``down_s`` seconds) and a declaration (its
tries, account, context window, continuation styles, first-token deadline). It is played through a *leg*,
the client under test, for ``calls`` calls in a row:

* `RETRYING`: ``retrying()`` over every route of the scenario, with circuit breakers of its own;
* `ONE_ROUTE`: ``retrying()`` over the first route only (what ``retrying()`` did before it took routes);
* `TAP`: the openai SDK, with its own retries and timeouts, over a tap client on the first route, with that
  route's deadline: what a single-route client does (it cannot fall back; its rescues are counted as they
  are);
* `relay_leg(start)`: the relay in front of the routes, started by ``start(table)`` with the route table,
  and the openai SDK (no retries of its own) talking to it.

What the caller must get: the whole answer, once (after a `Restarted`, the replay; with a `Continued`, the
rest), or a stop with the summary key and the provider's error code. The conduct checks, over each server's
request log (`RequestRecord.at`) and what it answered: at most ``max_requests`` requests and ``max_failed``
failed answers per route; after a failed answer, the next request at least ``min_spacing_s`` later, and at
least the wait it stated (Retry-After honoured); every call within ``call_s``; the last ``healthy_last``
calls answered by the first route at its first request (healthy again after an outage).

    outcomes = await run_routes(route_catalog(), legs=(RETRYING, TAP))
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import functools
import importlib
import importlib.util
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Final, TypeAlias

import anyio
import httpx

from ..classify import Diagnosis
from ..runtime import (
    Breakers,
    Continued,
    ContinueStyle,
    Ids,
    NoRoute,
    Offer,
    Recovery,
    Restarted,
    RetryPolicy,
    Route,
    RunRecord,
    StreamConfig,
    StreamFailed,
    TextDelta,
    open_stream,
    retrying,
)
from ._harness import BODIES, _sdk_http, _tls, sdk_available
from ._prefill import PREFILL_REFUSAL, ends_with_assistant
from ._script import End, Headers, Rst, Script, Send, Sleep, Stall, Status
from ._server import FaultServer, Request, RequestRecord
from ._wire import text_stream

__all__ = [
    "ONE_ROUTE",
    "RELAY",
    "RETRYING",
    "TAP",
    "Got",
    "Leg",
    "Provider",
    "RelayStart",
    "RouteOutcome",
    "RouteScenario",
    "TableRoute",
    "playable",
    "relay_leg",
    "relay_routes",
    "relay_table",
    "route_catalog",
    "run_route_scenario",
    "run_routes",
    "tally",
]

PREFIX: Final = "routes/"
FORMAT: Final = "openai-chat"  # the openai SDK speaks it: every leg plays every scenario
DEADLINE_S: Final = 2.0
"""The first-token deadline a route declares unless the scenario says otherwise (the tap's too)."""
MIN_SPACING_S: Final = 0.04
"""The least time between a failed answer and the next request on that route (the breakers space by 0.05)."""
WAIT_TOLERANCE_S: Final = 0.01
CUT_SLACK_S: Final = 0.5
"""How long past its ``call_s`` the harness lets a call run before it cuts it (and says so)."""
_ANSWER: Final = ("The quick", " brown fox", " jumps over", " the lazy", " dog.")
ANSWER: Final = "".join(_ANSWER)
_SHOWN: Final = "".join(_ANSWER[:2])
_JSON: Final = ("content-type", "application/json")


def _error(code: int, kind: str, error_code: str | None, message: str, *headers: tuple[str, str]) -> Script:
    import json

    error: dict[str, Any] = {"message": message, "type": kind, "code": error_code}
    return (Status(code, (_JSON, *headers), json.dumps({"error": error}).encode()),)


def _stream(parts: Sequence[str]) -> Script:
    return (Headers(), *(Send(frame) for frame in text_stream(FORMAT, list(parts))), End())


OK: Final[Script] = _stream(_ANSWER)
REST: Final[Script] = _stream([ANSWER[len(_SHOWN) :]])  # what a continuation after the cut must write
CUT: Final[Script] = (
    Headers(),
    *(Send(frame) for frame in text_stream(FORMAT, list(_ANSWER))[:3]),  # role, "The quick", " brown fox"
    Rst(),
)
LATE: Final[Script] = (Headers(), Sleep(2.0), *OK[1:])
SILENT: Final[Script] = (Stall(),)  # takes the request, sends nothing, not even the headers
MUTE: Final[Script] = (Headers(), Stall())  # the headers, then nothing


def limited(wait: str, header: str = "retry-after-ms") -> Script:
    return _error(429, "requests", "rate_limit_exceeded", "Rate limit reached.", (header, wait))


BUSY: Final[Script] = _error(503, "server_error", None, "The server is overloaded or not ready yet.")
OVERLOADED: Final[Script] = _error(529, "overloaded_error", None, "Overloaded")
SERVER_ERROR: Final[Script] = _error(
    500, "server_error", None, "The server had an error processing your request."
)
QUOTA: Final[Script] = _error(
    429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota."
)
AUTH: Final[Script] = _error(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
OVERFLOW: Final[Script] = _error(
    400, "invalid_request_error", "context_length_exceeded", "This model's maximum context length is 8192."
)
POLICY: Final[Script] = _error(
    400,
    "invalid_request_error",
    "content_policy_violation",
    "Your request was rejected by the safety system.",
)


def _stated_wait(script: Script) -> float | None:
    """The wait a scripted error answer states (retry-after-ms, else retry-after in seconds)."""
    for step in script:
        if isinstance(step, Status):
            headers = dict(step.headers)
            if "retry-after-ms" in headers:
                return float(headers["retry-after-ms"]) / 1000
            if "retry-after" in headers:
                return float(headers["retry-after"])
    return None


def _failed(script: Script) -> bool:
    """Whether the answer is a failure: an error status, or a stream without its clean end."""
    if any(isinstance(step, Status) for step in script):
        return any(isinstance(step, Status) and step.code >= 400 for step in script)
    return not any(isinstance(step, End) for step in script)


@dataclass(frozen=True, slots=True)
class Provider:
    """One route: what its server plays and what the route declares, with the conduct bounds on it.

    ``answers[n]`` is played for the server's n-th request (the last one for every later request), except
    that for ``down_s`` seconds from the scenario's start every request gets ``down``; with
    ``refuses_prefill`` a request ending with the assistant's turn gets Anthropic's refusal of a prefill.
    ``tries``, ``account``, ``context_window``, ``continuations`` and ``first_token_s`` are the `Route`'s.
    ``max_requests`` / ``max_failed``: the most requests / failed answers the route may see in the whole
    scenario (None: no bound).
    """

    name: str
    answers: tuple[Script, ...]
    _: KW_ONLY
    down_s: float = 0.0
    down: Script = BUSY
    refuses_prefill: bool = False
    tries: int = 2
    account: str | None = None
    context_window: int | None = None
    continuations: frozenset[ContinueStyle] | None = None
    first_token_s: float | None = DEADLINE_S
    max_requests: int | None = 3
    max_failed: int | None = None


@dataclass(frozen=True, slots=True)
class RouteScenario:
    """Providers behind routes (the first is where a single-route client goes), and what must come of it.

    ``answer``: the text the caller must read, whole and once (None: the call must stop, with summary key
    ``stop`` and, when given, the provider's error ``code`` in its evidence). ``confirm``: what the caller
    answers when asked (a replay must show a `Restarted`, a continuation a `Continued`); ``continue_with``:
    the continuation style asked for. Calls are made one after another, ``pause_s`` apart, until ``span_s``
    has passed since the first (at least one, at most ``calls``), each within ``call_s``; the last
    ``healthy_last`` must be answered by the first route at its first request.
    """

    name: str
    description: str
    routes: tuple[Provider, ...]
    _: KW_ONLY
    answer: str | None = ANSWER
    stop: str | None = None
    code: str | None = None
    confirm: Recovery | None = None
    continue_with: ContinueStyle | None = None
    calls: int = 1
    span_s: float = 0.0
    pause_s: float = 0.0
    call_s: float = 3.0
    healthy_last: int = 0
    min_spacing_s: float = MIN_SPACING_S

    def __post_init__(self) -> None:
        if (self.answer is None) == (self.stop is None):
            raise ValueError(f"{self.name}: a route scenario expects either an answer or a stop")
        names = [route.name for route in self.routes]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"{self.name}: routes must be named, each name once")


def _scenarios() -> list[RouteScenario]:
    p = Provider
    instruction = frozenset({ContinueStyle.INSTRUCTION})
    return [
        RouteScenario(
            "rate-limit-short-wait",
            "a 429 asking for 0.5 s: the route is waited for and answers; the fallback is not asked",
            (p("primary", (limited("500"), OK), max_requests=2), p("fallback", (OK,), max_requests=0)),
        ),
        RouteScenario(
            "rate-limit-long-wait",
            "a 429 asking for 30 s: the next route now, not a 30 s wait",
            (p("primary", (limited("30", "retry-after"),), max_requests=1), p("fallback", (OK,))),
        ),
        RouteScenario(
            "rate-limit-persistent",
            "every answer a 429 with a short wait: each wait honoured, a few tries, then the next route",
            (p("primary", (limited("250"),)), p("fallback", (OK,))),
        ),
        RouteScenario(
            "overloaded-persistent",
            "every answer a 529 overloaded: a bounded number of tries, spaced, then the next route",
            (p("primary", (OVERLOADED,)), p("fallback", (OK,))),
        ),
        RouteScenario(
            "server-error-persistent",
            "every answer a 500: a bounded number of tries, spaced, then the next route",
            (p("primary", (SERVER_ERROR,)), p("fallback", (OK,))),
        ),
        RouteScenario(
            "silent-before-headers",
            "takes the request and sends nothing: never asked again, the next route answers",
            (p("primary", (SILENT,), tries=3, first_token_s=0.3, max_requests=1), p("fallback", (OK,))),
        ),
        RouteScenario(
            "silent-after-headers",
            "sends the headers, then nothing: never asked again, the next route answers",
            (p("primary", (MUTE,), tries=3, first_token_s=0.3, max_requests=1), p("fallback", (OK,))),
        ),
        RouteScenario(
            "late-first-token",
            "the first token 2 s after the headers, past the route's 0.3 s deadline: the next route answers",
            (p("primary", (LATE,), first_token_s=0.3, max_requests=1), p("fallback", (OK,))),
            call_s=1.8,
        ),
        RouteScenario(
            "context-overflow-larger-window",
            "the request is longer than the 8k window: not the other 8k route, the 128k one",
            (
                p("small", (OVERFLOW,), context_window=8_192, max_requests=1),
                p("same-size", (OVERFLOW,), context_window=8_192, max_requests=0),
                p("large", (OK,), context_window=128_000),
            ),
        ),
        RouteScenario(
            "context-overflow-no-larger-window",
            "longer than the window, and no route has a larger one: it stops, nothing else asked",
            (
                p("small", (OVERFLOW,), context_window=8_192, max_requests=1),
                p("same-size", (OK,), context_window=8_192, max_requests=0),
            ),
            answer=None,
            stop="provider_error.context_overflow",
            code="context_length_exceeded",
        ),
        RouteScenario(
            "quota-other-account",
            "the account's quota is used up: not the same account's other route, another account's",
            (
                p("acme-1", (QUOTA,), account="acme", max_requests=1),
                p("acme-2", (QUOTA,), account="acme", max_requests=0),
                p("globex", (OK,), account="globex"),
            ),
        ),
        RouteScenario(
            "quota-same-account-only",
            "the quota is used up and every route bills the same account: it stops, nothing else asked",
            (
                p("acme-1", (QUOTA,), account="acme", max_requests=1),
                p("acme-2", (OK,), account="acme", max_requests=0),
            ),
            answer=None,
            stop="provider_error.quota_exhausted",
            code="insufficient_quota",
        ),
        RouteScenario(
            "auth-other-provider",
            "the key is refused: not asked again, another provider's route answers",
            (p("openai", (AUTH,), max_requests=1), p("azure", (OK,), account="azure")),
        ),
        RouteScenario(
            "content-policy",
            "the provider rejects the content: it stops with the provider's reason, the other route unasked",
            (p("strict", (POLICY,), max_requests=1), p("lax", (OK,), max_requests=0)),
            answer=None,
            stop="provider_error.content_filter",
            code="content_policy_violation",
        ),
        RouteScenario(
            "cut-after-text-replay",
            "reset after visible text: the caller is asked, the replay on the next route is a Restarted",
            (p("cutting", (CUT,), tries=1, max_requests=1), p("fallback", (OK,))),
            confirm=Recovery.REPLAY,
        ),
        RouteScenario(
            "cut-after-text-continue",
            "reset after visible text: the caller is asked, the next route writes only the rest",
            (
                p("cutting", (CUT,), tries=1, max_requests=1),
                p("fallback", (REST,), continuations=instruction),
            ),
            confirm=Recovery.CONTINUE,
        ),
        RouteScenario(
            "prefill-refused-then-instruction",
            "a prefill continuation on the next route, whose model refuses a prefill (400): sent again there"
            " by instruction, and only the rest is read",
            (p("cutting", (CUT,), tries=1, max_requests=1), p("no-prefill", (REST,), refuses_prefill=True)),
            confirm=Recovery.CONTINUE,
            continue_with=ContinueStyle.PREFILL,
        ),
        RouteScenario(
            "outage-then-recovery",
            "down (503) for 2 s, a call every 0.1 s for 3 s: the fallback answers, the breaker opens,"
            " probes and closes; the last calls are the primary's again",
            (
                p("primary", (OK,), down_s=2.0, tries=1, max_requests=None, max_failed=10),
                p("fallback", (OK,), max_requests=None),
            ),
            calls=60,
            span_s=3.0,
            pause_s=0.1,
            call_s=1.5,
            healthy_last=3,
        ),
    ]


def route_catalog(names: Iterable[str] | None = None) -> list[RouteScenario]:
    """The route scenarios (named ``routes/<slug>``), optionally those matching any of ``names``."""
    patterns = list(names or ())
    out = [dataclasses.replace(s, name=PREFIX + s.name) for s in _scenarios()]
    return [s for s in out if not patterns or any(fnmatch.fnmatchcase(s.name, p) for p in patterns)]


# -- what a leg is given, and what a call got ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TableRoute:
    """One row of the route table a leg is given: a route's name, its server's URL and its declaration."""

    name: str
    base_url: str
    tries: int
    account: str | None
    context_window: int | None
    continuations: frozenset[ContinueStyle] | None
    first_token_s: float | None


@dataclass(slots=True)
class Got:
    """What one call gave the caller: the text it read (after its last `Restarted`), the recoveries it saw,
    how often it was asked to confirm, and the failure it ended with (``diagnosis``; ``error`` for one without
    a diagnosis: `NoRoute`, an SDK error the tap did not see, the harness's own bound)."""

    started: float
    ended: float = 0.0
    text: str = ""
    restarted: int = 0
    continued: int = 0
    asked: int = 0
    diagnosis: Diagnosis | None = None
    error: str | None = None
    code: str | None = None  # the provider's error code, as the SDK's error carries it
    records: tuple[RunRecord, ...] = ()


Call: TypeAlias = Callable[[], Awaitable[Got]]
Session: TypeAlias = Callable[
    ["RouteScenario", Sequence[TableRoute]], contextlib.AbstractAsyncContextManager[Call]
]
RelayStart: TypeAlias = Callable[[Sequence[TableRoute]], contextlib.AbstractAsyncContextManager[str]]
"""Starts the relay in front of the table's routes; yields the relay's base URL, and stops it on exit."""


@dataclass(frozen=True, slots=True)
class Leg:
    """A client under test: ``session(scenario, table)`` yields the call it makes, again for each call.
    ``gated``: its every scenario must be right and well conducted (a baseline's is only counted)."""

    name: str
    label: str
    session: Session
    gated: bool = False
    unavailable: Callable[[], str | None] = lambda: None  # why it cannot play here (None: it can)
    concurrency: int = 6  # plays at once: under load of its own, a client misses the scenarios' deadlines


def _received(got: Got, event: object) -> None:
    if isinstance(event, Restarted):
        got.restarted += 1
        got.text = ""  # a replay: the screen starts afresh
    elif isinstance(event, Continued):
        got.continued += 1
    elif isinstance(event, TextDelta):
        got.text += event.text


def _policy() -> RetryPolicy:
    return RetryPolicy(6, 10.0, initial_delay_s=0.05, max_delay_s=0.2)


def _breakers() -> Breakers:
    return Breakers(threshold=3, cool_down_s=0.3, min_spacing_s=0.05)


@contextlib.asynccontextmanager
async def _retrying(
    scenario: RouteScenario, table: Sequence[TableRoute], *, collapse: bool = False
) -> AsyncIterator[Call]:
    # One TLS context for every play's client: each would otherwise load the CA bundle again (~0.1 s).
    client = httpx.AsyncClient(
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=0), trust_env=False, verify=_tls()
    )
    breakers = _breakers()  # the scenario's calls share them, as a process's chains share its own

    def opener(url: str) -> Callable[[Ids], Any]:
        return lambda ids: open_stream(FORMAT, base_url=url, json=BODIES[FORMAT], client=client, ids=ids)

    routes = [
        Route(
            row.name,
            opener(row.base_url),
            tries=row.tries,
            account=row.account,
            context_window=row.context_window,
            continuations=row.continuations,
            first_token_s=row.first_token_s,
        )
        for row in (table[:1] if collapse else table)
    ]
    choice = scenario.confirm

    async def call() -> Got:
        got = Got(time.monotonic())

        def confirm(diagnosis: Diagnosis, offer: Offer) -> Recovery | None:
            got.asked += 1
            return choice if choice in offer.recoveries else None

        run = retrying(
            _policy(),
            routes,
            confirm=None if choice is None else confirm,
            ids={"context": {"scenario": scenario.name, "harness_path": "retrying"}},
            continue_with=scenario.continue_with,
            breakers=breakers,
        )
        try:
            async with run:
                async for event in run:
                    _received(got, event)
        except StreamFailed as failure:
            got.diagnosis = failure.diagnosis
        except NoRoute as exc:
            got.error = str(exc)
        got.records = run.records
        return got

    try:
        yield call
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await client.aclose()


@contextlib.asynccontextmanager
async def _openai(
    base_url: str, config: StreamConfig | None, *, retries: bool, records: list[RunRecord]
) -> AsyncIterator[Call]:
    """The openai SDK's streaming call, over a tap client with ``config`` (or a plain client); with
    ``retries``, the SDK's own (2, honouring Retry-After) and its own timeout."""
    import openai

    from .. import tap

    http = _sdk_http(openai)
    limits = http.Limits(max_connections=None, max_keepalive_connections=0)
    if config is not None:
        transport = tap.async_http_client(
            http=http.__name__,
            config=config.replace(sinks=(*config.sinks, records.append)),
            limits=limits,
            trust_env=False,
            verify=_tls(),
        )
    else:
        transport = openai.DefaultAsyncHttpxClient(limits=limits, trust_env=False, verify=_tls())
    options: dict[str, Any] = {} if retries else {"max_retries": 0}
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", http_client=transport, **options)

    async def call() -> Got:
        got = Got(time.monotonic())
        before = len(records)
        stream: Any = None
        try:
            stream = await client.chat.completions.create(**BODIES[FORMAT], stream=True)
            async for item in stream:
                for choice in item.choices or ():
                    got.text += getattr(choice.delta, "content", None) or ""
        except Exception as exc:  # the SDK's own error, as the app gets it
            code = getattr(exc, "code", None)
            got.code = code if isinstance(code, str) else None
            failure = tap.failure_of(exc)
            if failure is not None:
                got.diagnosis = failure.diagnosis
            else:
                got.error = f"{type(exc).__name__}: {exc}"[:200]
        finally:
            if stream is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await stream.close()
        got.records = tuple(records[before:])
        return got

    try:
        yield call
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await client.close()


@contextlib.asynccontextmanager
async def _tap(scenario: RouteScenario, table: Sequence[TableRoute]) -> AsyncIterator[Call]:
    first = table[0]
    deadline = first.first_token_s
    config = StreamConfig(connect_timeout=deadline, first_token_timeout=deadline)
    async with _openai(first.base_url, config, retries=True, records=[]) as call:
        yield call


def relay_leg(start: RelayStart, unavailable: Callable[[], str | None] = lambda: None) -> Leg:
    """The relay as a leg: ``start(table)`` runs it in front of the table's routes and yields its base URL;
    the caller is the openai SDK without retries of its own, so what it gets is the relay's doing. Counted,
    not gated: the relay replays nothing once a byte reached the client (a cut after text is lost there by
    design)."""

    @contextlib.asynccontextmanager
    async def session(scenario: RouteScenario, table: Sequence[TableRoute]) -> AsyncIterator[Call]:
        async with start(table) as base_url, _openai(base_url, None, retries=False, records=[]) as call:
            yield call

    def why() -> str | None:
        return sdk_available("tap:openai") or unavailable()

    return Leg("relay", "relay, route table", session, unavailable=why, concurrency=3)


_RELAY_TABLE: Final = "streamfsm.relay._table"  # the relay's route table (issue #34's relay part)


def _relay_unavailable() -> str | None:
    if importlib.util.find_spec("uvicorn") is None:
        return "uvicorn is not installed (pip install 'streamfsm[relay]')"
    try:
        table = importlib.import_module(_RELAY_TABLE)
    except ImportError:
        return "this version's relay takes no route table (relay --routes)"
    return None if hasattr(table, "RouteTable") else "this version's relay takes no route table"


def relay_table(table: Sequence[TableRoute]) -> dict[str, Any]:
    """``table`` as the relay's route table (``streamfsm relay --routes FILE``'s JSON), every model to its
    routes in order, with the breakers `RETRYING` has. A route without an account pays as itself, as a
    `Route` does (the relay would otherwise take the routes of one host for one account)."""
    routes: dict[str, Any] = {}
    for row in table:
        spec: dict[str, Any] = {
            "upstream": row.base_url,
            "tries": row.tries,
            "account": row.account or row.name,
        }
        if row.context_window is not None:
            spec["context_window"] = row.context_window
        if row.first_token_s is not None:
            spec["first_token_s"] = row.first_token_s
        routes[row.name] = spec
    breakers = _breakers()
    return {
        "routes": routes,
        "models": {"*": [row.name for row in table]},
        "breakers": {
            "threshold": breakers.threshold,
            "cool_down_s": breakers.cool_down_s,
            "min_spacing_s": breakers.min_spacing_s,
        },
        "total_s": _policy().total_s,
    }


@contextlib.asynccontextmanager
async def relay_routes(table: Sequence[TableRoute]) -> AsyncIterator[str]:
    """The relay, served by uvicorn on a thread of its own, with `relay_table` of ``table`` as its route
    table; yields its base URL."""
    import threading

    import uvicorn

    from ..relay import Relay, RelayConfig

    routes = importlib.import_module(_RELAY_TABLE).RouteTable.from_dict(relay_table(table), environ={})
    # One upstream pool: its default sixteen each load the CA bundle (~0.1 s apiece) at the relay's start.
    options: dict[str, Any] = {"upstream": table[0].base_url, "routes": routes, "max_connections": 64}
    relay = Relay(RelayConfig(**options))
    # Quiet: the harness reads the relay's doing from what the caller got and the servers' logs.
    config = uvicorn.Config(relay, host="127.0.0.1", port=0, log_level="critical", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="streamfsm-harness-relay", daemon=True)

    def started() -> int:
        thread.start()
        deadline = time.monotonic() + 10.0
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the relay did not start")
            time.sleep(0.01)
        port: int = server.servers[0].sockets[0].getsockname()[1]
        return port

    def stopped() -> None:
        server.should_exit = True
        thread.join(10.0)

    port = await anyio.to_thread.run_sync(started)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(stopped)


RETRYING: Final = Leg("retrying", "retrying(), every route", _retrying, gated=True)
ONE_ROUTE: Final = Leg(
    "retrying-one-route", "retrying(), first route only", functools.partial(_retrying, collapse=True)
)
TAP: Final = Leg(
    "tap:openai", "openai SDK + tap, first route", _tap, unavailable=lambda: sdk_available("tap:openai")
)
RELAY: Final = relay_leg(relay_routes, _relay_unavailable)


# -- playing and scoring ------------------------------------------------------------------------------------


class _Server:
    """A provider's router: plays its scripts and remembers what it answered each request."""

    def __init__(self, provider: Provider, start: float) -> None:
        self.provider, self.start = provider, start
        self.answered: dict[int, Script] = {}

    def __call__(self, request: Request) -> Script:
        provider = self.provider
        if provider.refuses_prefill and ends_with_assistant(request.body):
            script: Script = (Status(400, (_JSON, ("x-should-retry", "false")), PREFILL_REFUSAL),)
        elif time.monotonic() - self.start < provider.down_s:
            script = provider.down
        else:
            script = provider.answers[min(request.seq, len(provider.answers) - 1)]
        self.answered[request.seq] = script
        return script


@dataclass(frozen=True, slots=True)
class RouteOutcome:
    """One route scenario played through one leg: what the caller got (``rescued``: the answer, every call;
    ``stopped_right``: the stop it must have), the conduct violations, and each route's request count."""

    name: str
    via: str  # the leg's name
    description: str
    gated: bool
    expects_answer: bool
    right: bool
    problems: tuple[str, ...]  # what the caller got wrong
    violations: tuple[str, ...]  # conduct, from the request logs
    requests: Mapping[str, int]
    seconds: float
    records: tuple[RunRecord, ...] = field(default=(), repr=False)

    @property
    def rescued(self) -> bool:
        return self.expects_answer and self.right

    @property
    def stopped_right(self) -> bool:
        return not self.expects_answer and self.right

    @property
    def matched(self) -> bool:
        """Right and well conducted: what a gated leg must be."""
        return self.right and not self.violations

    @property
    def mismatch(self) -> str | None:
        return "; ".join((*self.problems, *self.violations)) or None


def _caller_problems(scenario: RouteScenario, gots: Sequence[Got]) -> list[str]:
    problems = []
    for index, got in enumerate(gots):
        call = f"call {index + 1}: " if len(gots) > 1 else ""
        failure = got.error or (got.diagnosis.summary_key if got.diagnosis is not None else None)
        if scenario.answer is not None:
            if failure is not None:
                problems.append(f"{call}ended with {failure}, not the answer")
            elif got.text != scenario.answer:
                problems.append(
                    f"{call}read {len(got.text)} characters, not the answer's {len(scenario.answer)}"
                )
            elif scenario.confirm is Recovery.REPLAY and not got.restarted:
                problems.append(f"{call}the replay showed no Restarted")
            elif scenario.confirm is Recovery.CONTINUE and not got.continued:
                problems.append(f"{call}the continuation showed no Continued")
            if scenario.confirm is not None and got.asked != 1 and failure is None:
                problems.append(f"{call}asked to confirm {got.asked} times, not once")
            continue
        diagnosis = got.diagnosis
        if diagnosis is None and got.error is not None and got.code is not None:
            # No diagnosis on the caller's side (through the relay: the provider's own answer, passed on):
            # the provider's error code must reach it.
            if got.code != scenario.code:
                problems.append(f"{call}{got.error}, not the provider's {scenario.code}")
        elif diagnosis is None:
            problems.append(f"{call}{'got the answer' if failure is None else failure}, not {scenario.stop}")
        elif diagnosis.summary_key != scenario.stop:
            problems.append(f"{call}stopped as {diagnosis.summary_key}, not {scenario.stop}")
        elif scenario.code is not None and f"body.code={scenario.code}" not in diagnosis.evidence:
            problems.append(f"{call}the stop does not pass on the provider's {scenario.code}")
    return problems


def _conduct(
    scenario: RouteScenario, logs: Mapping[str, list[tuple[RequestRecord, Script]]], gots: Sequence[Got]
) -> list[str]:
    out = []
    for provider in scenario.routes:
        log = logs[provider.name]
        failed = [record for record, script in log if _failed(script)]
        if provider.max_requests is not None and len(log) > provider.max_requests:
            out.append(f"{provider.name}: {len(log)} requests, at most {provider.max_requests}")
        if provider.max_failed is not None and len(failed) > provider.max_failed:
            out.append(f"{provider.name}: {len(failed)} failed answers, at most {provider.max_failed}")
        early: list[tuple[float, float]] = []  # (gap, the wait it stated) of a request before the wait
        close: list[float] = []  # gaps under min_spacing_s after a failure that stated no wait
        for (before, script), (after, _) in itertools.pairwise(log):
            if not _failed(script):
                continue
            gap, wait = after.at - before.at, _stated_wait(script)
            if wait is not None and gap < wait - WAIT_TOLERANCE_S:
                early.append((gap, wait))
            elif wait is None and gap < scenario.min_spacing_s:
                close.append(gap)
        if early:
            gap, wait = min(early)
            times = f"{len(early)} time{'s' if len(early) > 1 else ''}"
            out.append(
                f"{provider.name}: asked again before its stated wait, {times} ({gap:.3f} s after {wait:g} s)"
            )
        if close:
            times = f"{len(close)} time{'s' if len(close) > 1 else ''}"
            least = scenario.min_spacing_s
            out.append(
                f"{provider.name}: asked again within {least:g} s of a failure, {times} ({min(close):.3f} s)"
            )
    for index, got in enumerate(gots):
        took = got.ended - got.started
        if took > scenario.call_s:
            out.append(f"call {index + 1} took {took:.2f} s, at most {scenario.call_s:g}")
    first = scenario.routes[0].name
    for index in range(max(0, len(gots) - scenario.healthy_last), len(gots)):
        got = gots[index]
        window = [
            (name, script)
            for name, log in logs.items()
            for record, script in log
            if got.started <= record.at <= got.ended
        ]
        if len(window) != 1 or window[0][0] != first:
            out.append(f"call {index + 1}: not answered by {first} at its first request")
        elif _failed(window[0][1]) or got.text != scenario.answer:
            out.append(f"call {index + 1}: {first} did not answer it")
    return out


async def run_route_scenario(scenario: RouteScenario, leg: Leg) -> RouteOutcome:
    """Play ``scenario`` through ``leg``, on fault servers of its own, and score it."""
    started = time.monotonic()
    servers = [_Server(provider, started) for provider in scenario.routes]
    gots: list[Got] = []
    async with contextlib.AsyncExitStack() as stack:
        faults = [await stack.enter_async_context(FaultServer(server)) for server in servers]
        table = tuple(
            TableRoute(
                p.name, fault.base_url, p.tries, p.account, p.context_window, p.continuations, p.first_token_s
            )
            for p, fault in zip(scenario.routes, faults, strict=True)
        )
        async with leg.session(scenario, table) as call:
            for server in servers:  # an outage counts from the first call, however long the leg took to start
                server.start = time.monotonic()
            first = time.monotonic()
            for index in range(scenario.calls):
                if index and time.monotonic() - first >= scenario.span_s:
                    break
                if index and scenario.pause_s:
                    await anyio.sleep(scenario.pause_s)
                got: Got | None = None
                begun = time.monotonic()
                with anyio.move_on_after(scenario.call_s + CUT_SLACK_S):
                    got = await call()
                if got is None:
                    bound = scenario.call_s + CUT_SLACK_S
                    got = Got(begun, error=f"the call did not end within {bound:g} s (cut by the harness)")
                got.ended = time.monotonic()
                gots.append(got)
        logs = {
            p.name: [(record, server.answered.get(record.seq, ())) for record in fault.requests]
            for p, server, fault in zip(scenario.routes, servers, faults, strict=True)
        }
    problems = _caller_problems(scenario, gots)
    return RouteOutcome(
        name=scenario.name,
        via=leg.name,
        description=scenario.description,
        gated=leg.gated,
        expects_answer=scenario.answer is not None,
        right=not problems,
        problems=tuple(problems),
        violations=tuple(_conduct(scenario, logs, gots)),
        requests={name: len(log) for name, log in logs.items()},
        seconds=time.monotonic() - started,
        records=tuple(record for got in gots for record in got.records),
    )


def playable(legs: Iterable[Leg]) -> tuple[list[Leg], dict[str, str]]:
    """The legs that can play here, and why each other one cannot."""
    able, unable = [], {}
    for leg in legs:
        why = leg.unavailable()
        if why is None:
            able.append(leg)
        else:
            unable[leg.name] = why
    return able, unable


_WARM_UP: Final = RouteScenario("warm-up", "one route that answers", (Provider("only", (OK,)),))


async def _play_leg(scenarios: Sequence[RouteScenario], leg: Leg) -> list[RouteOutcome]:
    await run_route_scenario(_WARM_UP, leg)
    results: list[RouteOutcome | None] = [None] * len(scenarios)
    limiter = anyio.CapacityLimiter(leg.concurrency)

    async def one(index: int, scenario: RouteScenario) -> None:
        async with limiter:
            results[index] = await run_route_scenario(scenario, leg)

    # The long plays (an outage across many calls) first, so that the short ones fill in beside them.
    order = sorted(range(len(scenarios)), key=lambda i: -scenarios[i].span_s)
    async with anyio.create_task_group() as group:
        for index in order:
            group.start_soon(one, index, scenarios[index])
            await anyio.sleep(0)  # started in this order: the limiter takes them as they come
    return [outcome for outcome in results if outcome is not None]


async def run_routes(
    scenarios: Iterable[RouteScenario], legs: Sequence[Leg] = (RETRYING, TAP)
) -> list[RouteOutcome]:
    """Play every scenario through every leg: a leg at a time (its timings are its own), the leg's
    ``concurrency`` of its scenarios at once (each play has servers of its own), after one unmeasured play
    that warms the leg up (an SDK's import and first parse block the event loop for a while). The outcomes
    in the order of the legs, then of the scenarios."""
    scenarios = list(scenarios)
    out: list[RouteOutcome] = []
    for leg in legs:
        out += await _play_leg(scenarios, leg)
    return out


def tally(outcomes: Iterable[RouteOutcome]) -> dict[str, int]:
    """Rescued answers, right stops and conduct violations, out of how many."""
    outcomes = list(outcomes)
    answers = [o for o in outcomes if o.expects_answer]
    stops = [o for o in outcomes if not o.expects_answer]
    return {
        "rescued": sum(o.rescued for o in answers),
        "answers": len(answers),
        "stopped_right": sum(o.stopped_right for o in stops),
        "stops": len(stops),
        "violations": sum(len(o.violations) for o in outcomes),
        "violating": sum(1 for o in outcomes if o.violations),
    }
