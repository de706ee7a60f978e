"""What the agent tells a retrying chain, routed to the attempt it concerns: a tool call's start and end go to
the attempt that produced the call (else the running one, else the last), an abort to the running attempt
and to any wait. ``RetryingRun`` (``_retry.py``) is an ``AgentRouting``; the attributes below are its own,
set in its ``__init__``."""

from __future__ import annotations

from ..classify import AbortSource
from ._attempt_io import AttemptIo
from ._delivery import Delivery, ToolResult
from ._stream import Run, ToolScope

__all__ = ["AgentRouting"]


class AgentRouting:
    """The agent's facts half of ``RetryingRun``: see the module docstring."""

    _ended: bool
    _abort_request: tuple[AbortSource, str | None] | None
    _current: Run | None  # the attempt in flight (entered)
    _last: Run | None  # the latest attempt, in flight or ended
    _owner: dict[str, Run]  # who owns each released tool call
    _delivery: Delivery
    _io: AttemptIo

    def abort(self, reason: str | None = None, *, source: AbortSource | str = AbortSource.USER) -> None:
        """Stop now: the running attempt fails as ``local_abort``; a delay or a confirmation ends at once."""
        source = AbortSource(source)
        if self._ended or self._abort_request is not None:
            return
        self._abort_request = (source, reason)
        if self._current is not None:
            self._current.abort(reason, source=source)
        self._io.interrupt()

    def _run_for(self, call_id: str) -> Run:
        run = self._owner.get(call_id) or self._current or self._last
        if run is None:
            raise RuntimeError("no attempt has started yet")
        return run

    def tool_started(self, call_id: str, effect: str = "effectful") -> None:
        """The agent started running a complete tool call (see `Run.tool_started`)."""
        if call_id in self._owner and call_id not in self._delivery.calls:
            raise ValueError(f"tool call {call_id!r} belongs to an attempt that was restarted")
        self._run_for(call_id).tool_started(call_id, effect)

    def tool_finished(self, call_id: str, ok: bool = True, result: object = None) -> None:
        """The tool finished; ``result`` is kept in ``partial`` (in memory only, never in a record)."""
        self._run_for(call_id).tool_finished(call_id, ok=ok)
        call = self._delivery.calls.get(call_id)
        if call is not None:
            self._delivery.results[call_id] = ToolResult(call_id, call.name, ok, result)

    def tool(self, call_id: str, effect: str = "effectful") -> ToolScope:
        """``async with run.tool(call_id):`` (``with`` on a sync chain) brackets one tool execution (use
        ``tool_finished`` to keep a result)."""
        return ToolScope(self, call_id, effect)
