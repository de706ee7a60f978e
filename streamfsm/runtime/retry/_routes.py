"""Where a retry can help: the routes of a chain, and the tabled step that picks the next one. No I/O.

The verdict (``classify``) says whether another attempt is *safe*; whether it can *help* depends on where it
goes. `helps` reads a failure's facts into one `Help`: the same route after the wait, the next route now, or
none, with what the next route must have (`Need`). `hop` applies it to a chain's routes: the tries each
route has had, the routes that went silent, and what the circuit breakers (``_breaker``) admit.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Final, NamedTuple, TypeAlias

from ...classify import Diagnosis, FailureClass, ProviderErrorKind, Verdict
from ...wire import ContinueStyle
from ._breaker import Breakers, BreakerState
from ._recovery import Recovery
from ._retry_policy import DecisionKind, Failed, RetryPolicy, Step, budget_spent

if TYPE_CHECKING:
    from ..core._config import Ids
    from ..drivers._stream import Run

__all__ = [
    "NEXT_ROUTE",
    "SHORT_WAIT_S",
    "Help",
    "Hop",
    "Need",
    "Route",
    "Routing",
    "helps",
    "hop",
    "rerouted",
]

OpenRoute: TypeAlias = Callable[["Ids"], "Run | Awaitable[Run]"]

SHORT_WAIT_S: Final = 10.0
"""The longest provider-stated wait a route is waited out for; past it, the next route is tried now."""


@dataclass(frozen=True, slots=True)
class Route:
    """One place a chain's attempt can go: an attempt opener (as ``retrying``'s ``open_attempt``) and what
    the step needs to know of it.

    * ``name``: the route in records, metrics and the circuit breaker (routes of one name share a breaker
      across every chain of the process); at most 64 printable characters.
    * ``tries`` (2): attempts on this route in one chain before a transient failure moves on.
    * ``account``: who pays for it (an account, a key's name; default: the route's ``provider``, else its
      name). A quota, billing or auth failure moves only to a route of another account.
    * ``provider``: the format or provider name, for the record (informational).
    * ``context_window``: its model's window in tokens; a context overflow moves only to a larger one.
    * ``continuations``: the continuation styles its model accepts (None: whatever its format sends).
    * ``first_token_s``: a deadline for the first token: a later one moves on. The headers must come within
      it of the request's start and the first token within it of the headers (the run's ``connect_timeout``
      and ``first_token_timeout``, bounded).
    * ``race`` (False, with ``first_token_s``): at the deadline, rather than giving up this route's attempt,
      race the next route's beside it: the first to yield an event goes on, the other is stopped (its record
      says ``local_abort``, source ``app``). The sync form does not race: the deadline applies.
    """

    name: str
    open_attempt: OpenRoute
    _: KW_ONLY
    tries: int = 2
    account: str | None = None
    provider: str | None = None
    context_window: int | None = None
    continuations: frozenset[ContinueStyle] | None = None
    first_token_s: float | None = None
    race: bool = False

    def __post_init__(self) -> None:
        name = self.name
        if not isinstance(name, str) or not 0 < len(name) <= 64 or not name.isprintable():
            raise ValueError(f"a route's name must be 1 to 64 printable characters, not {name!r}")
        if not callable(self.open_attempt):
            raise TypeError(f"route {name!r}: open_attempt must be callable: Ids -> a fresh run")
        tries = self.tries
        if isinstance(tries, bool) or not isinstance(tries, int) or not 1 <= tries <= 32:
            raise ValueError(f"route {name!r}: tries must be an integer from 1 to 32, not {tries!r}")
        window = self.context_window
        if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
            raise ValueError(f"route {name!r}: context_window must be a positive integer, not {window!r}")
        deadline = self.first_token_s
        if deadline is not None and (
            isinstance(deadline, bool)
            or not isinstance(deadline, (int, float))
            or not (deadline > 0 and math.isfinite(deadline))
        ):
            raise ValueError(f"route {name!r}: first_token_s must be a positive number, not {deadline!r}")
        if self.race and deadline is None:
            raise ValueError(f"route {name!r}: race needs first_token_s, the deadline at which it starts")
        if self.continuations is not None:
            object.__setattr__(self, "continuations", frozenset(ContinueStyle(s) for s in self.continuations))

    @property
    def payer(self) -> str:
        """Whose quota and credentials the route uses."""
        return self.account or self.provider or self.name

    def accepts(self, style: ContinueStyle) -> bool:
        return self.continuations is None or style in self.continuations


class Help(enum.Enum):
    """Where another attempt after a failure can help."""

    _value_: str

    SAME = "same_route"  # the same route, after the wait (the next one once its tries are spent)
    NEXT = "next_route"  # another route, now
    NONE = "no_route"  # no route: the request itself, or something local, is the cause


class Need(enum.Enum):
    """What the next route must have for the failure not to meet it again."""

    _value_: str

    ANY = "any"
    LARGER_WINDOW = "larger_window"
    OTHER_ACCOUNT = "other_account"


class Judgement(NamedTuple):
    help: Help
    need: Need
    why: str
    transient: bool  # counts against the route's circuit breaker


_P = ProviderErrorKind
_PROVIDER: Final[dict[ProviderErrorKind, Judgement]] = {
    _P.RATE_LIMIT: Judgement(Help.SAME, Need.ANY, "the route is rate limited", True),
    _P.OVERLOADED: Judgement(Help.SAME, Need.ANY, "the route is overloaded", True),
    _P.SERVER_ERROR: Judgement(Help.SAME, Need.ANY, "the route had a server error", True),
    _P.UNKNOWN: Judgement(Help.SAME, Need.ANY, "the route failed", True),
    _P.MODEL_UNAVAILABLE: Judgement(Help.NEXT, Need.ANY, "the model is not available on the route", True),
    _P.NOT_FOUND: Judgement(Help.NEXT, Need.ANY, "the route does not know the model or endpoint", False),
    _P.CONTEXT_OVERFLOW: Judgement(
        Help.NEXT, Need.LARGER_WINDOW, "the request is longer than the model's window", False
    ),
    _P.REQUEST_TOO_LARGE: Judgement(
        Help.NEXT, Need.LARGER_WINDOW, "the request is larger than the route accepts", False
    ),
    _P.QUOTA_EXHAUSTED: Judgement(
        Help.NEXT, Need.OTHER_ACCOUNT, "the account's quota or credit is used up", False
    ),
    _P.AUTH: Judgement(Help.NEXT, Need.OTHER_ACCOUNT, "the route's credentials were refused", False),
    _P.PERMISSION: Judgement(
        Help.NEXT, Need.OTHER_ACCOUNT, "the route's account may not use the model", False
    ),
    _P.CONTENT_FILTER: Judgement(
        Help.NONE, Need.ANY, "the provider rejected the content; another route is not a way around it", False
    ),
    _P.INVALID_REQUEST: Judgement(Help.NONE, Need.ANY, "the request itself was rejected", False),
}
"""Provider errors, by kind: a limit or a fault of the route's waits or moves on; a refusal of what the route
is (its window, its account, its model) moves to a route that differs in that; a refusal of the request
itself goes nowhere."""

_SILENT_CAUSES: Final = frozenset({"connect_timeout", "first_token_timeout", "read_timeout"})
_UNREACHABLE_CAUSES: Final = frozenset({"dns", "tls", "unreachable"})
_LOCAL: Final = frozenset(
    {
        FailureClass.LOCAL_ABORT,
        FailureClass.CONSUMER_ERROR,
        FailureClass.TOOL_SIDE_EFFECT,
        FailureClass.COMPLETED,
    }
)


def silent(diagnosis: Diagnosis) -> bool:
    """The provider took the request and said nothing: no headers or no first byte before a deadline."""
    return (
        diagnosis.failure_class
        in (FailureClass.WATCHDOG, FailureClass.BEFORE_CONNECTION, FailureClass.EARLY_STREAM)
        and diagnosis.cause in _SILENT_CAUSES
        and diagnosis.possibly_delivered
    ) or (diagnosis.failure_class is FailureClass.WATCHDOG and diagnosis.cause == "first_token_timeout")


def helps(diagnosis: Diagnosis) -> Judgement:
    """Where another attempt after ``diagnosis`` can help: the table above for a provider's error, then
    the route's silence, an unreachable route, a local cause; any other break (a cut, a stall mid-answer,
    a garbled stream) is the route's fault, waited out and then moved on from."""
    klass = diagnosis.failure_class
    if klass in _LOCAL:
        return Judgement(Help.NONE, Need.ANY, "the attempt ended here, not at the route", False)
    if klass is FailureClass.PROVIDER_ERROR:
        try:
            kind = ProviderErrorKind(diagnosis.cause)
        except ValueError:
            kind = ProviderErrorKind.UNKNOWN
        return _PROVIDER[kind]
    if silent(diagnosis):
        return Judgement(Help.NEXT, Need.ANY, "the route took the request and said nothing", True)
    if diagnosis.cause in _UNREACHABLE_CAUSES:
        return Judgement(Help.NEXT, Need.ANY, "the route could not be reached", True)
    return Judgement(Help.SAME, Need.ANY, "the route's stream broke", True)


@dataclass(frozen=True, slots=True)
class Hop:
    """Where the next attempt goes: ``route`` (an index into the chain's routes), or None when no route can
    help; ``help`` and ``why`` say why; ``wait`` whether the failure's delay is waited out before it (a move
    to another route goes now)."""

    help: Help
    route: int | None
    why: str
    wait: bool = False


def _fits(route: Route, need: Need, failed: Route, window: int | None) -> bool:
    if need is Need.LARGER_WINDOW:
        return route.context_window is not None and (window is None or route.context_window > window)
    if need is Need.OTHER_ACCOUNT:
        return route.payer != failed.payer
    return True


def hop(
    diagnosis: Diagnosis,
    routes: Sequence[Route],
    at: int,
    *,
    tries: Sequence[int],
    silenced: Collection[int] = (),
    closed: Collection[int] = (),
    style: ContinueStyle | None = None,
) -> Hop:
    """Where the attempt after ``diagnosis`` (on ``routes[at]``) goes. ``tries``: the attempts each route
    has had in this chain; ``silenced``: the routes that went silent in it (never asked again);
    ``closed``: the routes whose breaker admits nothing now; ``style``: the continuation the next attempt
    carries, if it does (only a route that accepts it may take it).

    The same route is kept only while the failure is one it may get over, its tries are not spent and its
    breaker admits it; else the next route that fits, in order after ``at`` and then from the start, that
    has tries left, has not gone silent and is admitted."""
    judgement = helps(diagnosis)
    if judgement.help is Help.NONE:
        return Hop(Help.NONE, None, judgement.why)
    failed = routes[at]
    if silent(diagnosis):
        silenced = {*silenced, at}
    if (
        judgement.help is Help.SAME
        and at not in silenced
        and at not in closed
        and tries[at] < failed.tries
        and (style is None or failed.accepts(style))
        and (diagnosis.retry_after_s is None or diagnosis.retry_after_s <= SHORT_WAIT_S)
    ):
        return Hop(Help.SAME, at, judgement.why, wait=True)
    window = failed.context_window
    count = len(routes)
    for step in range(1, count + 1):
        index = (at + step) % count
        route = routes[index]
        if index == at and judgement.help is Help.NEXT:
            break
        if (
            index in silenced
            or index in closed
            or tries[index] >= route.tries
            or not _fits(route, judgement.need, failed, window)
            or (style is not None and not route.accepts(style))
        ):
            continue
        # Back on the failed route (every other one spent): only after its wait, as a retry of it.
        return Hop(Help.NEXT if index != at else Help.SAME, index, judgement.why, wait=index == at)
    return Hop(Help.NONE, None, f"{judgement.why}, and no route that could help is left")


class Routing:
    """A chain's routes as it goes: where its next attempt goes (``at``), the tries each route has had, the
    routes that went silent, and what the shared breakers say. The executor asks it to `take` a route before
    each attempt, tells it how each `ended`, and has it send each failure's step on (`after`)."""

    def __init__(self, routes: Sequence[Route], breakers: Breakers, clock: Callable[[], float]) -> None:
        routes = tuple(routes)
        if not routes or not all(isinstance(route, Route) for route in routes):
            raise TypeError("routes must be a non-empty sequence of Route")
        names = [route.name for route in routes]
        if len(set(names)) != len(names):
            raise ValueError(f"route names must be unique, not {names}")
        self.routes, self.breakers, self.clock = routes, breakers, clock
        self.at = 0
        self.tries = [0] * len(routes)
        self.silenced: set[int] = set()
        self.admitted: BreakerState | None = None  # the breaker's state the running attempt was let in by
        self.spacing = 0.0  # how long the admitted attempt waits to start
        # Where a continuation the consumer may still choose would go (None: no route takes its style).
        self.continues_at: int | None = None
        self._continued: Step | None = None  # the step of that continuation, once chosen

    @property
    def route(self) -> Route:
        return self.routes[self.at]

    def take(self, *, retry: bool, rival: bool = False) -> Route | None:
        """Admit the next attempt on ``routes[at]`` or, for a first attempt or a rival, when its breaker or
        retry cap says no, on the next route that admits it (None: none does now). ``retry``: an attempt
        after a failure, which goes only where `after` sent it (the route that fits what the failure needs);
        ``rival``: one raced beside the running attempt, on another route."""
        now = self.clock()
        count = len(self.routes)
        for step in range(1 if rival else 0, count if rival or not retry else 1):
            index = (self.at + step) % count
            route = self.routes[index]
            if index in self.silenced or self.tries[index] >= route.tries:
                continue
            state = self.breakers.admit(route.name, now, retry=retry)
            if state is not None:
                self.at, self.admitted = index, state
                self.tries[index] += 1
                self.spacing = self.breakers.wait_s(route.name, now) if retry else 0.0
                return route
        return None

    def spacing_s(self) -> float:
        """How long the admitted attempt waits to keep the route's retries apart."""
        return self.spacing

    def index(self, name: str) -> int:
        return next(i for i, route in enumerate(self.routes) if route.name == name)

    def ended(self, name: str, diagnosis: Diagnosis | None, *, probe: bool) -> None:
        """An attempt on route ``name`` ended with ``diagnosis`` (a completed one closes its breaker);
        ``probe``: it was let in as the half-open breaker's probe."""
        now = self.clock()
        if diagnosis is None or diagnosis.failure_class is FailureClass.COMPLETED:
            self.breakers.succeeded(name, now, probe=probe)
            return
        self.breakers.failed(name, now, transient=helps(diagnosis).transient, probe=probe)
        if silent(diagnosis):
            self.silenced.add(self.index(name))

    def breaker(self, name: str | None = None) -> BreakerState:
        return self.breakers.state(self.route.name if name is None else name, self.clock())

    def after(self, policy: RetryPolicy, step: Step, failed: Failed, style: ContinueStyle | None) -> Step:
        """``after_failure``'s ``step`` for ``failed``, sent where a retry can help (`rerouted`); ``at`` moves
        to the route the next attempt goes to."""
        now = self.clock()
        closed = {i for i, r in enumerate(self.routes) if not self.breakers.admits(r.name, now, retry=True)}
        at, tries, silenced = self.at, self.tries, self.silenced

        def to(carrying: ContinueStyle | None) -> Hop:
            return hop(
                failed.diagnosis,
                self.routes,
                at,
                tries=tries,
                silenced=silenced,
                closed=closed,
                style=carrying,
            )

        where = to(style if failed.continuing else None)
        # A continuation offered now goes to the first route that takes its style, maybe past the next one,
        # with that hop's own wait: none on the way to another route, the route's own on the same one.
        there = where if failed.continuing or style is None else to(style)
        self.continues_at = there.route
        continued = rerouted(policy, step, failed, there)
        step = rerouted(policy, step, failed, where)
        self._continued = continued
        if (
            step.kind is not DecisionKind.STOP
            and step.then is not Recovery.RESUME
            and where.route is not None
        ):
            self.at = where.route
        return step

    def continue_there(self) -> Step:
        """The consumer chose the continuation `after` found a route for: the next attempt goes there, and
        this is its step (the spacing of the route it goes to is `take`'s, as for any attempt)."""
        assert self.continues_at is not None
        assert self._continued is not None
        self.at = self.continues_at
        return self._continued


def rerouted(policy: RetryPolicy, step: Step, failed: Failed, where: Hop) -> Step:
    """``after_failure``'s ``step``, sent where ``where`` says. A resume re-attaches where the stream is and a
    refused prefill is sent again where it was refused: both stay. A stop for what the route is (its
    window, account, model) or for a wait longer than the policy honours becomes an attempt on the next
    route now, when one fits, nothing reached the consumer and the budgets allow; a retry or a question
    moves to the hop's route (at once, when it is another), or stops when no route can help."""
    if failed.aborted is not None or step.then is Recovery.RESUME or step.prefill_refused:
        return step
    diagnosis = step.diagnosis or failed.diagnosis
    if step.kind is DecisionKind.STOP:
        if where.help is Help.NONE and step.stop_reason is not None and where.why not in step.stop_reason:
            return dataclasses.replace(step, stop_reason=f"{step.stop_reason}; no route: {where.why}")
        if where.help is not Help.NEXT or where.route is None or failed.exposed is not None:
            return step
        if (
            diagnosis.verdict is Verdict.NO_RETRY
            and diagnosis.failure_class is not FailureClass.PROVIDER_ERROR
        ):
            return step
        if budget_spent(policy, failed.attempt, failed.elapsed_s, 0.0) is not None:
            return step
        then = Recovery.CONTINUE if failed.continuing else Recovery.RETRY
        return Step(DecisionKind.RETRY, diagnosis, delay_reason=NEXT_ROUTE, then=then)
    if where.route is None:
        return Step(DecisionKind.STOP, diagnosis, stop_reason=f"no route can help: {where.why}")
    if where.help is Help.NEXT:
        return dataclasses.replace(step, delay_s=0.0, delay_reason=NEXT_ROUTE)
    return step


NEXT_ROUTE: Final = "next_route"
"""The delay reason of an attempt sent to another route: it goes at once."""
