"""The run handle: what a caller holds of any run, whoever drives it (our own client, an SDK stream, the tap).

A handle is a ``RunCore`` (``_core``: the machine, the record, the ledger, how the run ends) and its watched
reads (``_reads``: ``LoopReads`` or ``ThreadReads``, which ``abort()`` and the tool facts reach). What it
says (``state``, ``record``, ``result()`` ...) is the core's; what the agent tells it (``tool_started``,
``abort`` ...) goes to the core through the reads, which move the read's deadline.

Results go out one of two ways: events to a consumer (``ConsumerRun``: ``Run`` and the sync runs, which
iterate), or bytes passed through to an SDK with the library's error raised and the failure attached (the
tap's byte streams, ``tap/_transport.py``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from types import TracebackType
from typing import Any, TypeVar

from ...classify import AbortSource, Diagnosis
from ...machine import State, Trigger
from ...wire import ConsumerEvent, Result
from ..core._errors import StreamFailed
from ..core._run_core import RunCore
from ..records._record import RunRecord
from ..records._sinks import deliver

__all__ = ["ConsumerRun", "RunHandle", "ToolScope"]

_H = TypeVar("_H", bound="RunHandle")


class RunHandle:
    """What every run shows and takes; see the module docstring. ``_core`` and ``_reads`` are set by the
    driver's ``__init__``."""

    _core: RunCore
    _reads: Any  # LoopReads | ThreadReads

    def _reader(self) -> Any:
        """The driver's watched reads (``LoopReads``, ``ThreadReads``) of its core (``_core``)."""
        raise NotImplementedError

    def _hold(self, core: RunCore) -> None:
        self._core = core
        self._reads = self._reader()
        self.config, self.ids, self.run_id, self.trace_id = core.config, core.ids, core.run_id, core.trace_id

    # -- what the caller reads --------------------------------------------------------------------------

    @property
    def provider(self) -> str:
        return self._core.provider

    @property
    def delta_keys(self) -> Mapping[str, int]:
        return self._core.rec.delta_keys

    @property
    def sdk_retries(self) -> int:
        """Requests the SDK made and retried before this run's own (``wrap()``, the tap; 0 for
        ``open_stream``)."""
        return self._core.rec.sdk_retries

    @property
    def state(self) -> State:
        return self._core.state

    @property
    def history(self) -> tuple[Trigger, ...]:
        return self._core.history

    @property
    def record(self) -> RunRecord | None:
        """The run record, once the run has ended (finished or failed)."""
        return self._core.record

    @property
    def diagnosis(self) -> Diagnosis | None:
        return self._core.diagnosis

    @property
    def finished(self) -> bool:
        return self._core.finished

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.provider} {self._core.state} run_id={self.run_id}>"

    def collect(self: _H) -> _H:
        """Keep the text and reasoning for `result()`; call it before the first event (``for event in
        run.collect():``). Returns the run. Without it the per-event path keeps nothing."""
        self._core.collect()
        return self

    def result(self) -> Result:
        """What the run produced, once it has ended: text, reasoning and refusal (kept since `collect()`),
        the complete tool calls, the final usage and the finish reason (None if the run failed before one).
        The caller's own data: never recorded, logged or shown in a repr."""
        return self._core.result()

    # -- the agent's facts ------------------------------------------------------------------------------

    def abort(self, reason: str | None = None, *, source: AbortSource | str = AbortSource.USER) -> None:
        """Stop the stream now (also from another thread, on a sync run); the run fails as ``local_abort``
        with this source and reason."""
        if self._core.abort(reason, source):
            self._reads.interrupt()

    def tool_started(self, call_id: str, effect: str = "effectful") -> None:
        """The agent started running a complete tool call. ``effect``: "effectful" or "read_only"."""
        self._reads.tool_started(call_id, effect)

    def tool_finished(self, call_id: str, ok: bool = True) -> None:
        self._reads.tool_finished(call_id, ok)

    def tool(self, call_id: str, effect: str = "effectful") -> ToolScope:
        """``async with run.tool(call_id):`` (or ``with``, on a sync run) brackets one tool execution."""
        return ToolScope(self, call_id, effect)

    def relayed(self, event: ConsumerEvent | str, nbytes: int = 0, *, terminal: bool | None = None) -> None:
        """A proxy reports what it wrote downstream: the event (or a wire event name) and the bytes written.

        The record then carries a ``relay`` section (events, chunks and bytes written, the last event sent,
        whether the terminal event was sent) with the close kind of the run: ``client_abort``,
        ``client_write_failed``, ``upstream_error``, ``upstream_timeout``, ``upstream_unreachable`` or
        ``upstream_premature_close`` (``RelayClose``).
        """
        self._core.relayed(event, nbytes, terminal)


class ConsumerRun(RunHandle):
    """A handle whose results go to a consumer as events: what the core made of each read is queued, and the
    run's failure raised once the events before it are given. Its driver (async or sync) reads."""

    _pending: deque[ConsumerEvent]
    _deferred: StreamFailed | None
    _entered: bool

    def _hold(self, core: RunCore) -> None:
        super()._hold(core)
        self._pending = deque()
        self._entered = False
        self._deferred = None

    @property
    def streaming(self) -> bool:
        """The headers arrived: the body is being read."""
        return self._core.streaming

    _streaming = streaming  # the retry executor's name for it

    def bound_first_token(self, seconds: float) -> None:
        """A route's deadline for the first token (see `Route.first_token_s`): before the run is entered."""
        if self._entered:
            raise RuntimeError("a run's first-token deadline is set before it is entered")
        self._core.bound_first_token(seconds)
        self.config = self._core.config

    def _over(self) -> bool:
        """Before a read: True once the run is over and its events given (the iteration ends); raises the
        failure held back behind them; refuses a read outside the run's block or after ``abort()``."""
        core = self._core
        if core.done:
            if self._deferred is not None:
                raise self._take_deferred()
            self._seal()
            return True
        if not core.streaming:
            raise RuntimeError(f"iterate a run inside its `{self._block}` block")
        if core.abort_request is not None:
            raise core.timed_out(Trigger.LOCAL_ABORT)
        return False

    _block = "async with"

    def _took(self, events: list[ConsumerEvent]) -> None:
        """What the core made of a read: its events to give, and the run's failure after them."""
        self._pending.extend(events)
        core = self._core
        if core.timing.look_by is not None:
            self._reads.looked()
        if core.failure is not None:
            if not self._pending:
                raise self._take_failure()
            self._deferred = core.take_failure()  # events that came before the fault are delivered first

    def _take_failure(self) -> StreamFailed:
        # Raised from a call, never from a local: the raising frame would hold it, and it that frame.
        failure = self._core.take_failure()
        assert failure is not None
        return failure

    def _take_deferred(self) -> StreamFailed:
        # Raised from a call, never from a local: the raising frame would hold it, and it that frame.
        failure, self._deferred = self._deferred, None
        assert failure is not None
        return failure

    def _seal(self) -> None:
        self._core.seal()
        # A failure still held back will not be raised now (the consumer left); its frames hold this run.
        self._deferred = None

    def _emit(self) -> None:
        record = self._core.record
        if record is not None:
            deliver(self.config.sinks, record)  # never raises; logs the run, then each sink in order


class ToolScope:
    """One tool execution, bracketed: ``with`` or ``async with`` (the agent's tool may be either): started on
    entry, finished on exit (``ok`` unless the block raised)."""

    __slots__ = ("_call_id", "_effect", "_run")

    def __init__(self, run: Any, call_id: str, effect: str) -> None:
        self._run, self._call_id, self._effect = run, call_id, effect

    def __enter__(self) -> None:
        self._run.tool_started(self._call_id, self._effect)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._run.tool_finished(self._call_id, ok=exc_type is None)

    async def __aenter__(self) -> None:
        self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)
