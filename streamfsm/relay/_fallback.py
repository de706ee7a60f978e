"""A request the route table (``_table``) routes: each attempt goes to a route, and its answer's start is held
back from the client until its first token. An attempt that fails before then is decided by the same step
as ``retrying()``'s (``after_failure``, then ``Routing.after``: the table of where a retry can help, and
the circuit breakers of the routes); the client then gets the next route's stream as its one stream. Once a
byte went to the client nothing is replayed: the wire cannot say "discard what you got", so a later failure
ends with the format's error event, as without a table.

Each attempt is a run with its own record: its route, the breaker state that let it in, the attempts before
it (``attempts``), and the routes they went to (``route.tried``). A failed attempt's record goes out when
the relay moves on; it never counts as the exchange's answer.
"""

from __future__ import annotations

import dataclasses
import math
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import httpx

from ..classify import AbortSource
from ..runtime import (
    AttemptLink,
    Breaker,
    BreakerState,
    DecisionKind,
    Failed,
    Ids,
    Keepalive,
    Metadata,
    RelayClose,
    RouteTag,
    Routing,
    StreamConfig,
    Usage,
    after_failure,
)
from ..tap import TapRun, attempt, current_ids, run_of
from ._downstream import SHUTDOWN, Downstream, answer
from ._limits import BodyChunks
from ._relayed import RelayedRun
from ._table import RouteTable, TableRoute

__all__ = ["HOLD_BYTES", "Opening", "RouteBook", "Routed", "routed"]

HOLD_BYTES: Final = 64 * 1024  # an answer's start held back for its first token; past it, it goes on
_NOT_TOKENS: Final = (Keepalive, Metadata, Usage)  # what arrives before the first token without being one
_CLOSE_S: Final = 5.0
_RECOMPUTED: Final = frozenset({b"host", b"content-length"})  # set by httpx for each route's request


@dataclass(slots=True)
class Opening:
    """The start of one attempt's answer, read and held back from the client: the response (None: no
    headers came), its run, the chunks read with the consumer events each carried, and how reading ended
    (``ended``: the body's end; ``error``: what the send or a read raised)."""

    response: httpx.Response | None
    run: TapRun | None
    events: Any = None  # the run's kept events (``TapRun.keep_events``), which ``Downstream.stream`` drains
    held: list[tuple[bytes, list[Any]]] = field(default_factory=list)
    ended: bool = False
    error: BaseException | None = None
    _rest: AsyncIterator[bytes] | None = None

    @property
    def failed(self) -> bool:
        """Whether the attempt failed before anything of it reached the client."""
        return self.error is not None or (self.run is not None and self.run.failure is not None)

    async def hold(self) -> None:
        """Read until the first token (a non-streaming answer or an error: its whole body, up to
        ``HOLD_BYTES``; the relay passes a non-streaming answer on only once whole anyway), the body's end,
        or the run's failure."""
        response, run, events = self.response, self.run, self.events
        assert response is not None
        assert run is not None
        self._rest = chunks = response.aiter_raw()
        ok = 200 <= response.status_code < 300
        size = 0
        try:
            while run.failure is None and size <= HOLD_BYTES:
                chunk = await chunks.__anext__()
                size += len(chunk)
                carried = list(events)
                events.clear()
                self.held.append((chunk, carried))
                if ok and run.streams is not False and any(not isinstance(e, _NOT_TOKENS) for e in carried):
                    return
        except StopAsyncIteration:
            self.ended = True
        except httpx.HTTPError as exc:
            self.error = exc

    async def replay(self) -> AsyncIterator[bytes]:
        """What was held, each chunk with its events, then the rest as it is read (or what stopped it)."""
        for chunk, carried in self.held:
            self.events.extend(carried)
            yield chunk
        if self.error is not None:
            raise self.error
        if not self.ended and self._rest is not None:
            async for chunk in self._rest:
                yield chunk

    async def close(self) -> None:
        response = self.response
        if response is not None and not response.is_closed:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_S):
                await response.aclose()


class RouteBook:
    """One relay's routes as they go: the table, the fallbacks between its routes (counted since start), and
    who is told of a change (the metrics)."""

    def __init__(self, table: RouteTable) -> None:
        self.table = table
        self.fallbacks: dict[tuple[str, str], int] = {}
        self.watchers: list[Callable[[RouteBook], None]] = []
        self.names = tuple(route.name for route in table.routes)

    def fell_back(self, before: str, after: str) -> None:
        key = (before, after)
        self.fallbacks[key] = self.fallbacks.get(key, 0) + 1

    def breakers(self) -> dict[str, Breaker]:
        """The table's routes' breakers as they stand now (a route no request took yet: closed)."""
        known = {b.route: b for b in self.table.breakers.snapshot(time.monotonic())}
        return {name: known.get(name) or Breaker(name) for name in self.names}

    def changed(self) -> None:
        for watcher in self.watchers:
            watcher(self)

    def report(self) -> list[dict[str, Any]]:
        """The routes for the errors page: each with its upstream's host, the models it serves, its
        breaker's state, and the fallbacks away from it."""
        breakers = self.breakers()
        served: dict[str, list[str]] = {}
        for model, routes in self.table.models.items():
            for route in routes:
                served.setdefault(route.name, []).append(model)
        out = []
        for route in self.table.routes:
            breaker = breakers[route.name]
            out.append(
                {
                    "name": route.name,
                    "upstream": route.base.host,
                    "models": served.get(route.name, []),
                    "breaker": breaker.state.value,
                    "failures": breaker.failures,
                    "opened": breaker.opened,
                    "fallbacks": {to: n for (away, to), n in self.fallbacks.items() if away == route.name},
                }
            )
        return out


@dataclass(frozen=True, slots=True)
class Routed:
    """A request the table routes: its routes, its target (path and query), body, format and model."""

    routes: tuple[TableRoute, ...]
    target: bytes
    body: bytes
    provider: str
    model: str | None


async def routed(
    client: httpx.AsyncClient,
    request: httpx.Request,
    exchange: Downstream,
    book: RouteBook,
    call: Routed,
    config: StreamConfig,
) -> None:
    """Relay ``request`` over ``call.routes`` (see the module docstring)."""
    table = book.table
    by_name = {route.name: route for route in call.routes}
    routing = Routing([route.route for route in call.routes], table.breakers, time.monotonic)
    policy = table.policy(call.routes)
    base = current_ids() or Ids()
    trace = base.trace_id or uuid.uuid4().hex
    links: list[AttemptLink] = []
    started = time.monotonic()
    route = routing.take(retry=False)
    if route is None:
        await _no_route(exchange, book, call, config, base)
        return
    while True:
        spacing = routing.spacing_s()
        if spacing > 0:
            await anyio.sleep(spacing)
        chosen = by_name[route.name]
        assert routing.admitted is not None
        ids = dataclasses.replace(
            base,
            trace_id=trace,
            attempt=len(links) + 1,
            previous_run_id=links[-1].run_id if links else None,
            attempts=tuple(links),
            route=RouteTag(route.name, routing.admitted.value),
        )
        body = chosen.body(call.body)
        headers = chosen.headers([(k, v) for k, v in request.headers.raw if k.lower() not in _RECOMPUTED])
        outgoing = httpx.Request(request.method, chosen.url(call.target), headers=headers, content=body)
        outgoing.stream = BodyChunks(body)
        opening: Opening | None = None
        try:
            with attempt(ids, route.first_token_s):
                opening = await _open(client, outgoing, exchange)
            if not opening.failed:
                await _give(exchange, opening)
                return
        finally:
            _settle(routing, opening)
            book.changed()
        run = opening.run
        if run is None or run.diagnosis is None:  # no run to decide by: passed on as it came
            await _give(exchange, opening)
            return
        diagnosis = run.diagnosis
        breaker = table.breakers.state(route.name, time.monotonic())
        failed = Failed(
            diagnosis,
            len(links) + 1,
            time.monotonic() - started,
            answered=opening.response is not None,
        )
        step = routing.after(policy, after_failure(policy, failed), failed, None)
        if step.kind is DecisionKind.RETRY and step.delay_s > 0 and routing.route.name == route.name:
            # The wait goes before the route is taken, as in retrying(): the spacing counts from the take.
            await anyio.sleep(step.delay_s)
        after = routing.take(retry=True) if step.kind is DecisionKind.RETRY else None
        if after is None:  # no route can help: the client gets this attempt's answer, as without a table
            await _give(exchange, opening)
            return
        links.append(
            AttemptLink(
                run_id=run.run_id,
                attempt=len(links) + 1,
                summary_key=diagnosis.summary_key,
                verdict=diagnosis.verdict.value,
                decision="auto_retry",
                delay_s=round(step.delay_s, 4),
                delay_reason=step.delay_reason,
                next="retry",
                route=route.name,
                breaker=breaker.value,
            )
        )
        await _discard(exchange, opening)
        if after.name != route.name:
            book.fell_back(route.name, after.name)
            book.changed()
        route = after


async def _open(client: httpx.AsyncClient, request: httpx.Request, exchange: Downstream) -> Opening:
    """Send one attempt and hold its answer's start (see `Opening.hold`)."""
    before = len(exchange.runs)
    try:
        response = await client.send(request, stream=True)
    except httpx.HTTPError as exc:
        run = exchange.runs[-1].run if len(exchange.runs) > before else None
        return Opening(None, run, error=exc)
    run = run_of(response)
    if run is None:  # not a run (a redirect): passed on as it is
        return Opening(response, None, ended=False)
    opening = Opening(response, run, run.keep_events())
    relayed = exchange.relayed = exchange.relayed_of(run)  # the client's disconnect ends this attempt
    relayed.cancel_means(AbortSource.APP, SHUTDOWN, RelayClose.RELAY_SHUTDOWN)
    await opening.hold()
    return opening


async def _give(exchange: Downstream, opening: Opening) -> None:
    """The client gets this attempt's answer: its stream, or the relay's 502 / 504 when no headers came."""
    try:
        await _pass_on(exchange, opening)
    finally:
        await opening.close()


async def _pass_on(exchange: Downstream, opening: Opening) -> None:
    if opening.response is None:
        error = opening.error
        assert error is not None
        if isinstance(error, httpx.TimeoutException):
            await exchange.upstream_failed(504, "the upstream did not answer in time", error)
        else:
            await exchange.upstream_failed(502, "the upstream could not be reached", error)
        return
    opened = (opening.events, opening.replay()) if opening.run is not None else None
    await exchange.stream(opening.response, opened)


async def _discard(exchange: Downstream, opening: Opening) -> None:
    """A failed attempt the relay moves on from: nothing of it went to the client; its record goes out now."""
    await opening.close()
    run = opening.run
    if run is not None:
        relayed = exchange.relayed_of(run)
        exchange.runs[:] = [r for r in exchange.runs if r is not relayed]
        if exchange.relayed is relayed:
            exchange.relayed = None
        relayed.release()


def _settle(routing: Routing, opening: Opening | None) -> None:
    """The attempt ended on its route: its breaker hears how (an attempt cancelled before its run ended
    only frees the breaker's probe)."""
    run = opening.run if opening is not None else None
    diagnosis = run.diagnosis if run is not None else None
    probe = routing.admitted is BreakerState.HALF_OPEN
    if diagnosis is None:
        routing.breakers.failed(routing.route.name, routing.clock(), transient=False, probe=probe)
    else:
        routing.ended(routing.route.name, diagnosis, probe=probe)


async def _no_route(
    exchange: Downstream, book: RouteBook, call: Routed, config: StreamConfig, ids: Ids
) -> None:
    """Every route's breaker is open: 503 with ``Retry-After`` (when the first breaker lets a probe in),
    recorded as the relay's refusal; nothing went upstream."""
    table = book.table
    now = time.monotonic()
    breakers = book.breakers()
    waits = [
        b.opened_at + table.breakers.cool_down_s - now
        for name in (route.name for route in call.routes)
        if (b := breakers[name]).state is BreakerState.OPEN
    ]
    retry_after = max(1, math.ceil(min(waits))) if waits else 1
    states = ", ".join(f"{route.name}: {breakers[route.name].state.value}" for route in call.routes)
    why = f"no route can take the request now: no route's circuit breaker lets it in ({states})"
    headers = [(b"retry-after", str(retry_after).encode())]
    written = await answer(exchange.send, 503, exchange.request_id, "overloaded", why, headers)
    body = {"model": call.model} if call.model is not None else {}
    url = str(call.routes[0].url(call.target))
    run = TapRun(call.provider, body=body, url=url, config=config, ids=Ids(context=ids.context))
    RelayedRun(run).refused(why, "circuit_breaker", written, RelayClose.OVERLOADED)
