"""A run as the relay drives it: the tap's run (``TapRun``) beside the relay's own words for it.

The tap reads the upstream's bytes and drives the run; the relay writes them downstream and says what
reached the client (the record's ``relay`` section: bytes, events, the error event, the end), how the
stream closed where the outcome cannot say it, and what the relay refused. It also keeps the record open
for its last writes (``hold`` / ``release``), and says what a cancellation from outside means (its own
shutdown).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ..classify import AbortSource
from ..machine import Trigger
from ..runtime import ConsumerEvent, RelayClose
from ..tap import TapRun

__all__ = ["RelayedRun"]


class RelayedRun:
    """The relay's side of one ``TapRun`` (``run``): what it wrote downstream, how the stream closed, its
    hold on the record."""

    __slots__ = ("_cancel", "_due", "_held", "core", "run")

    def __init__(self, run: TapRun) -> None:
        self.run = run
        self.core = run.core
        self._held = False  # our writes are still to come: the record waits for release()
        self._due = False  # an end came while held
        self._cancel: tuple[AbortSource, str, RelayClose] | None = None

    @classmethod
    def started(cls, run: TapRun) -> RelayedRun:
        """A run the tap starts for the relay (``tap.relaying``), before it begins: its record has a
        ``relay`` section from the start, so that a run that ends before any byte goes down (an unreachable
        or silent upstream: a 502 or 504) still says how it closed; held, so that it counts the relay's own
        answer written after the run failed."""
        relayed = cls(run)
        relayed.relayed_bytes(0)
        relayed.hold()
        return relayed

    # -- the record, kept open for our last writes ---------------------------------------------------------

    def hold(self) -> None:
        """The relay writes the client's response: the record waits for ``release()``, so that it counts the
        relay's last writes too (its error event, the response's end)."""
        self._held = True
        self.run.keeps_record = self._keeps

    def _keeps(self) -> bool:
        if self._held:
            self._due = True
        return self._held

    def release(self) -> None:
        """The relay's exchange is over: an end that came while held happens now."""
        self._held = False
        if self._due:
            self.run.end()

    def cancel_means(self, source: AbortSource, reason: str, close: RelayClose) -> None:
        """What a cancellation from outside (no ``abort()`` came first) means for this run: the relay's own
        shutdown (the ASGI server cancels what is still running once its grace period is over)."""
        self._cancel = (source, reason, close)
        self.run.outside_cancel = self._cancelled

    def _cancelled(self) -> tuple[AbortSource, str]:
        assert self._cancel is not None
        source, reason, close = self._cancel
        self.core.relay_closed(close)
        return source, reason

    # -- what reached the client -------------------------------------------------------------------------

    def report(self, events: deque[ConsumerEvent] | Any, nbytes: int) -> None:
        """``nbytes`` of the chunk just written, with the consumer events it carried (the run's kept events,
        drained)."""
        if events:
            self.core.relayed_chunk(events, nbytes)  # as relayed() for each, the bytes with the first
        else:
            self.core.relayed(None, nbytes)

    def relayed_bytes(self, nbytes: int) -> None:
        """``nbytes`` written downstream that carried no consumer event of their own (the rest of a frame, a
        keepalive comment, ``data: [DONE]``, an error body; 0: the response started downstream): counted in
        the record's ``relay`` section, which this creates."""
        self.core.relayed(None, nbytes)

    def relayed_error(self, source: str, nbytes: int = 0) -> None:
        """An in-band error event reached the client: the upstream's own (``"upstream"``, passed on in the
        chunk that carried it) or the relay's (``"relay"``, ``nbytes`` of it)."""
        self.core.relayed_error(source, nbytes)

    def relayed_end(self) -> None:
        """The response's clean end reached the client (the last chunk of its framing was written)."""
        self.core.relayed_end()

    @property
    def terminal_relayed(self) -> bool:
        """Whether the terminal event was reported written downstream."""
        return self.core.terminal_relayed

    def relay_closed(self, close: RelayClose) -> None:
        """The relay's own word on how the stream closed where the outcome cannot say it: a finished run
        whose terminal event never reached the client, the relay shutting down."""
        self.core.relay_closed(close)

    # -- what the relay refused --------------------------------------------------------------------------

    def refused(
        self, reason: str, limit: str, nbytes: int = 0, close: RelayClose = RelayClose.OVERLOADED
    ) -> None:
        """The relay refused the request before it went upstream (``close`` ``overloaded``: a 503, ``limit``,
        one of its own, was full; ``refused``: a 400, 408 or 413, ``limit`` the rule the request broke;
        ``nbytes``: the answer's body the client took): the run ends now as the relay's own abort, with the
        close kind and the limit named in the ``relay`` section, and its record goes to the sinks."""
        self._refusal(limit, nbytes, close)
        core, run = self.core, self.run
        run.failure = core.fail(Trigger.LOCAL_ABORT, core.abort_facts(AbortSource.APP, reason))
        run.end()

    def refused_answer(self, reason: str, limit: str, nbytes: int = 0) -> None:
        """The relay refused the upstream's non-streaming answer (``limit``, a bound of its own, was passed):
        the run stops now as the relay's own abort, with the close kind ``refused`` and the limit named; the
        record goes out at ``release()`` (``nbytes``: the relay's answer the client took instead)."""
        self._refusal(limit, nbytes, RelayClose.REFUSED)
        self.run.abort(reason, source=AbortSource.APP)

    def _refusal(self, limit: str, nbytes: int, close: RelayClose) -> None:
        core = self.core
        core.relayed(None, nbytes)
        if nbytes:
            core.relayed_end()
        core.relay_limit(limit)
        core.relay_closed(close)
