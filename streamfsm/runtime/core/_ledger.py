"""What a run's stream produced and what the agent did with it: the tool calls the stream announced and
completed, the tools the agent ran (and whether with effects), the provider's own token total and, once
``collect()`` asked for it, the text: what ``result()`` gives and the facts a diagnosis names the tool by."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from ...machine import IllegalTransition, State, Trigger
from ...wire import FinishReason, ReasoningDelta, Result, TextDelta, ToolCall, ToolInputStart, Usage
from ..records._record import Recorder

__all__ = ["Ledger"]

_EFFECTS: Final = {"effectful": True, "read_only": False}


class Ledger:
    """One run's calls and tools; see the module docstring."""

    __slots__ = ("_calls", "_completed", "_effects", "_names", "current", "kept", "running", "total_tokens")

    def __init__(self) -> None:
        self._completed: dict[str, str] = {}  # call id -> name, for every complete call
        self._names: dict[str, str] = {}  # one entry per tool call the stream announced
        self.running: dict[str, bool] = {}  # call id -> effectful, while the agent runs it
        self.current: str | None = None  # the call the stream (or the agent) last worked on
        self._effects: dict[str, bool] = {}  # call id -> effectful, for every call the agent started
        self.total_tokens: int | None = None  # the provider's own total, where it gives one
        self._calls: list[ToolCall] = []  # the complete calls, kept for result() (rare events: no cost)
        self.kept: dict[str, list[str]] | None = None  # the text, once collect() asked for it

    # -- from the stream --------------------------------------------------------------------------------

    def announced(self, event: ToolInputStart) -> None:
        self.current = event.call_id
        self._names[event.call_id] = event.name

    def completed(self, event: ToolCall) -> None:
        self._calls.append(event)
        self._completed[event.call_id] = event.name
        self._names[event.call_id] = event.name
        self.current = event.call_id

    def text(self, event: TextDelta) -> None:
        assert self.kept is not None
        self.kept["refusal" if event.refusal else "text"].append(event.text)

    def reasoning(self, event: ReasoningDelta) -> None:
        assert self.kept is not None
        self.kept["reasoning"].append(event.text)

    def resumed_in(self, call_id: str, name: str) -> None:
        """A resumed stream goes on inside this call (whose arguments were streaming when it broke)."""
        self.current, self._names[call_id] = call_id, name

    # -- from the agent ---------------------------------------------------------------------------------

    def starting(self, call_id: str, effect: str, state: State) -> tuple[Trigger, bool]:
        """The trigger and effect of the agent starting ``call_id``: a complete call, not running yet."""
        if effect not in _EFFECTS:
            raise ValueError(f"effect must be 'effectful' or 'read_only', not {effect!r}")
        effectful = _EFFECTS[effect]
        trigger = (
            Trigger.TOOL_EXECUTION_START_EFFECTFUL if effectful else Trigger.TOOL_EXECUTION_START_READ_ONLY
        )
        if call_id not in self._completed:
            raise IllegalTransition(state, trigger)
        if call_id in self.running:
            raise ValueError(f"tool call {call_id!r} is already running")
        return trigger, effectful

    def started(self, call_id: str, effectful: bool) -> None:
        self.running[call_id] = effectful
        self._effects[call_id] = effectful

    def finished(self, call_id: str, state: State) -> None:
        if call_id not in self.running:
            raise IllegalTransition(state, Trigger.TOOL_EXECUTION_END)
        del self.running[call_id]

    def call_facts(self) -> dict[str, Any]:
        """What a diagnosis says of the call the stream (or the agent) last worked on."""
        call = self.current
        return {
            "tool_name": self._names.get(call) if call else None,
            "tool_ran": call in self._effects,
            "tool_effectful": self._effects.get(call) if call else None,
        }

    # -- the result -------------------------------------------------------------------------------------

    def result(self, rec: Recorder) -> Result:
        kept = self.kept
        if kept is None:
            raise RuntimeError("call run.collect() before iterating, to keep the text for result()")
        return self.result_of(rec, kept["text"], kept["reasoning"], kept["refusal"], self._calls)

    def result_of(
        self,
        rec: Recorder,
        text: list[str],
        reasoning: list[str],
        refusal: list[str],
        calls: Iterable[ToolCall],
    ) -> Result:
        tokens = rec.tokens
        total = self.total_tokens
        usage = None
        if total is not None or any(value is not None for value in tokens.values()):
            usage = Usage(tokens["input"], tokens["output"], tokens["reasoning"], tokens["cached"], total)
        unified = rec.finish_unified
        return Result(
            text="".join(text),
            reasoning="".join(reasoning),
            refusal="".join(refusal),
            tool_calls=tuple(calls),
            usage=usage,
            finish_reason=FinishReason(unified) if unified is not None else None,
            raw_finish_reason=rec.finish_raw,
        )
