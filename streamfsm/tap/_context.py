"""Correlation without touching the framework: ids for every run started inside a ``with`` block."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

from ..runtime import Ids
from ._notes import BLOCK_LEDGERS, Ledger

_CURRENT: Final[ContextVar[Ids | None]] = ContextVar("streamfsm_ids", default=None)
_RELAYED: Final[ContextVar[bytes | None]] = ContextVar("streamfsm_relayed", default=None)
_STARTED: Final[ContextVar[Callable[[Any], None] | None]] = ContextVar("streamfsm_relay_runs", default=None)
_FIRST_TOKEN: Final[ContextVar[float | None]] = ContextVar("streamfsm_first_token_s", default=None)


@contextmanager
def context(
    *,
    session_id: str | None = None,
    message_id: str | None = None,
    trace_id: str | None = None,
    **more: str,
) -> Iterator[Ids]:
    """Tag every run the tap starts inside this block (in this task, and in tasks it starts)::

        with streamfsm.context(session_id=session.id, message_id=message.id, tenant="acme"):
            await agent.run(...)

    ``more`` goes to the record's ``ids.context`` (redacted and bounded there). Blocks nest: an inner block
    keeps what it does not set. A block is also where ``failure_of`` looks for the failed run behind an
    exception a framework raised itself: one block per caller keeps callers running side by side apart."""
    for name, value in (("session_id", session_id), ("message_id", message_id), ("trace_id", trace_id)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a string, not {type(value).__name__}")
    for name, value in more.items():
        if not isinstance(value, str):
            raise TypeError(f"context value {name!r} must be a string, not {type(value).__name__}")
    outer = _CURRENT.get() or Ids()
    ids = Ids(
        trace_id=trace_id or outer.trace_id,
        session_id=session_id or outer.session_id,
        message_id=message_id or outer.message_id,
        context={**outer.context, **more},
    )
    token = _CURRENT.set(ids)
    ledgers = BLOCK_LEDGERS.set((*BLOCK_LEDGERS.get(), Ledger()))
    try:
        yield ids
    finally:
        BLOCK_LEDGERS.reset(ledgers)
        _CURRENT.reset(token)


def current_ids() -> Ids | None:
    return _CURRENT.get()


@contextmanager
def relaying(client: bytes = b"", started: Callable[[Any], None] | None = None) -> Iterator[None]:
    """Every run the tap starts inside this block is relayed downstream (``streamfsm.relay``): the relay
    reads the run itself, so the SDK's reads are not told what the bytes do not show. ``client``: who sent
    the request (its account and address, as the relay knows them); an attempt chain never joins runs of two
    clients. ``started``: called with each run (a ``TapRun``) before it begins, for the relay to take it on
    (its record's ``relay`` section from the start, kept open for the relay's own last writes)."""
    token = _RELAYED.set(client)
    kept = _STARTED.set(started)
    try:
        yield
    finally:
        _STARTED.reset(kept)
        _RELAYED.reset(token)


def relay_started() -> Callable[[Any], None] | None:
    """Who takes on each run the tap starts for a relay (see ``relaying``), or None."""
    return _STARTED.get()


def relayed() -> bool:
    return _RELAYED.get() is not None


def relayed_for() -> bytes | None:
    """The client of the request being relayed (see ``relaying``), or None outside a relay."""
    return _RELAYED.get()


@contextmanager
def attempt(ids: Ids, first_token_s: float | None = None) -> Iterator[None]:
    """Every run the tap starts inside this block is one attempt of a chain over routes (the relay's route
    table): ``ids`` whole (the chain's trace, the attempt's number and route, the attempts before it);
    ``first_token_s``: the route's deadline for the first token (`RunCore.bound_first_token`)."""
    token = _CURRENT.set(ids)
    bound = _FIRST_TOKEN.set(first_token_s)
    try:
        yield
    finally:
        _FIRST_TOKEN.reset(bound)
        _CURRENT.reset(token)


def first_token_bound() -> float | None:
    """The deadline for the first token of the attempt being started (see ``attempt``), or None."""
    return _FIRST_TOKEN.get()
