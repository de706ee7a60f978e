"""How a diagnosis reaches the caller through exceptions that are not ours.

The tap never replaces an exception the HTTP library or the SDK raises: it adds to it. The library's own
exception (a read error, a timeout) carries the run's ``StreamFailed`` as an attribute and its plain summary
as a note; an SDK's status or in-band error is found through the response or request it names.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from typing import Any, Final

from ..runtime import StreamFailed

_ATTRIBUTE: Final = "_streamfsm_failure"
_MAX_CHAIN: Final = 64
# response or request object -> the run that watched it (weakly: the run lives no longer than its response)
_BY_EXCHANGE: Final[weakref.WeakKeyDictionary[Any, Any]] = weakref.WeakKeyDictionary()


def detached(failure: StreamFailed) -> StreamFailed:
    """The failure as a carrier: no cause or traceback, whose frames would hold the run and its response."""
    failure.__cause__ = failure.__context__ = None
    failure.__traceback__ = None
    return failure


def attach(exc: BaseException, failure: StreamFailed) -> None:
    """Hang ``failure`` on ``exc``; its summary becomes a note where Python has notes (3.11+)."""
    setattr(exc, _ATTRIBUTE, failure)
    if sys.version_info >= (3, 11):
        exc.add_note(f"streamfsm: {failure}")


def remember(run: Any, *exchange: Any) -> None:
    """Make ``run.failure`` findable from the response and request an SDK error will carry."""
    for item in exchange:
        if item is not None:
            with contextlib.suppress(TypeError):  # not weakly referable
                _BY_EXCHANGE[item] = run


def run_of(response: Any) -> Any:
    """The tap's run (a ``TapRun``) watching ``response``, an ``httpx`` / ``httpx2`` response the tap
    returned; None when the tap did not start a run for it (not a streaming LLM request). For code that
    relays the stream downstream itself (``streamfsm.relay``): it reports what it wrote with
    ``run.relayed()`` and why it stopped with ``run.abort()`` / ``run.stopped()``."""
    try:
        return _BY_EXCHANGE.get(response)
    except TypeError:  # not weakly referable: not one of ours
        return None


def failure_of(exc: BaseException | None) -> StreamFailed | None:
    """The ``StreamFailed`` (``.diagnosis``, ``.record``) behind ``exc``, whatever wraps it, or None.

    Looks through ``exc`` itself, its ``__cause__`` / ``__context__`` chain and exception groups, and the
    ``response`` / ``request`` an SDK error carries (an HTTP status error, an in-band error event). Where a
    framework's retries left several attempts' failures in one chain, the last attempt's."""
    found: list[StreamFailed] = []
    seen: set[int] = set()
    todo: list[BaseException] = [exc] if exc is not None else []
    while todo and len(seen) < _MAX_CHAIN:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.extend(_carried(current))
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        group = getattr(current, "exceptions", None)  # an exception group (also the 3.10 backport's)
        if isinstance(group, (tuple, list)):
            todo.extend(e for e in group if isinstance(e, BaseException))
    # The first found of the highest attempt: the nearest to exc of the last attempt.
    return max(reversed(found), key=lambda failure: failure.record["ids"]["attempt"], default=None)


def _carried(exc: BaseException) -> list[StreamFailed]:
    if isinstance(exc, StreamFailed):
        return [exc]
    own = getattr(exc, _ATTRIBUTE, None)
    found = [own] if isinstance(own, StreamFailed) else []
    for name in ("response", "request"):
        try:
            item = getattr(exc, name, None)
        except Exception:  # httpx raises for a .request that was never set
            item = None
        if item is not None:
            try:
                run = _BY_EXCHANGE.get(item)
            except TypeError:
                run = None
            failure = getattr(run, "failure", None)
            if isinstance(failure, StreamFailed):
                found.append(failure)
    return found
