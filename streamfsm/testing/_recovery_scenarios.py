"""Recovery scenarios: a stream broken after visible output, recovered through ``retrying()`` by resume,
continuation, retry or replay, each checked against what the consumer must have read and how each attempt
of the chain began.

Unlike a catalog `Scenario` (one script, one run, one record), a recovery scenario is a chain of attempts,
played on a fault server of its own whose router keeps state across requests (`BackgroundResponses` for
the resume side). ``streamfsm harness`` plays them after the catalog, on the runtime path.
"""

from __future__ import annotations

import fnmatch
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import anyio

from ..classify import Action, Diagnosis, FailureClass, Phase, Verdict
from ..machine import Trigger
from ..runtime import (
    Continued,
    ContinueStyle,
    Ids,
    Offer,
    Recovery,
    Restarted,
    RetryingRun,
    RetryPolicy,
    Run,
    RunRecord,
    StreamConfig,
    StreamFailed,
    TextDelta,
    ToolCall,
    open_stream,
    retrying,
)
from ..wire import ResumeRefusal, SSEDecoder, ToolInputDelta, adapter_for, format_named
from ._background import BackgroundResponses, Cut
from ._harness import BODIES, DEFAULT_TIMEOUT_S, Outcome
from ._prefill import RefusesPrefill
from ._script import End, Fin, Headers, Keepalive, Rst, Script, Send
from ._server import FaultServer, Request, Router
from ._wire import Format, build, text_stream, tool_call_stream

__all__ = ["RecoveryScenario", "recovery_catalog", "run_recovery"]

PREFIX: Final = "recovery/"
_ANSWER: Final = ("The quick", " brown fox", " jumps over", " the lazy", " dog.")
_ARGS: Final = json.dumps({"path": "notes/todo.md", "text": "buy milk, eggs and bread"})


@dataclass(frozen=True, slots=True)
class RecoveryScenario:
    """A broken stream and the chain that must recover it.

    ``router`` makes a fresh fault-server router per play. ``confirm``: what the agent answers when asked
    (None: no confirm callback); ``continue_with``: the style a continuation is asked for in. ``chain``:
    how each attempt after the first must begin (the links' ``next``, e.g. ``("resume",)``). ``text``:
    everything the consumer must read, whole and once. ``calls``: the tool calls (name, arguments) it must
    receive, each once. ``ends``: the class of the last record.
    """

    name: str
    format: Format
    description: str
    router: Callable[[], Router]
    chain: tuple[str, ...]
    text: str
    calls: tuple[tuple[str, str], ...] = ()
    confirm: Recovery | None = None
    continue_with: ContinueStyle | None = None
    background: bool = True
    ends: FailureClass = FailureClass.COMPLETED
    config: dict[str, Any] = field(default_factory=dict, hash=False)


def _resume(
    frames: list[bytes],
    cuts: Sequence[Cut],
    refuse: ResumeRefusal | None = None,
    then: list[bytes] | None = None,
) -> Callable[[], Router]:
    """A background Responses provider; after a refused resume, ``then`` answers the next request."""

    def make() -> Router:
        provider = BackgroundResponses(frames, cuts, refuse=refuse)

        def route(request: Request) -> Script:
            if request.method == "POST" and provider.requests and then is not None:
                return (Headers(), *(Send(f) for f in then), End())
            return provider(request)

        return route

    return make


def _continue(
    first: list[bytes], how: Script, rest: list[bytes], *, refuses_prefill: bool = False
) -> Callable[[], Router]:
    """The first request gets ``first`` then ``how``; every later one the continuation ``rest`` (a prefill
    refused as Anthropic's current models refuse it, with ``refuses_prefill``)."""

    def make() -> Router:
        def route(request: Request) -> Script:
            if request.seq == 0:
                return (Headers(), *(Send(f) for f in first), *how)
            return (Headers(), *(Send(f) for f in rest), End())

        return RefusesPrefill(route) if refuses_prefill else route

    return make


def _index(frames: Sequence[bytes], marker: bytes) -> int:
    return next(i for i, frame in enumerate(frames) if marker in frame)


def _first(fmt: Format, frames: Sequence[bytes], kind: type) -> int:
    """The index of the first frame that decodes to an event of ``kind``."""
    adapter, decoder = adapter_for(fmt), SSEDecoder()
    for index, frame in enumerate(frames):
        if any(isinstance(e, kind) for sse in decoder.feed(frame) for e in adapter.feed(sse)):
            return index
    raise ValueError(f"no {kind.__name__} in the stream")


def _scenarios() -> list[RecoveryScenario]:
    r: Format = "openai-responses"
    answer = "".join(_ANSWER)
    text = text_stream(r, list(_ANSWER))
    at = _index(text, b"brown fox") + 1  # after visible text
    call = tool_call_stream(r, [("write_file", _ARGS)], text=["Saving it."])
    in_args = _index(call, b"function_call_arguments.delta") + 2
    rest = text_stream(r, [" jumps over the lazy dog."])
    out = [
        RecoveryScenario(
            f"{PREFIX}{r}/resume-after-fin",
            r,
            "background stream closed mid-answer: re-attached after the last event, one seamless stream",
            _resume(text, [Cut(at)]),
            ("resume",),
            answer,
        ),
        RecoveryScenario(
            f"{PREFIX}{r}/resume-after-rst-twice",
            r,
            "reset mid-answer, then again after resuming: re-attached each time",
            _resume(text, [Cut(at, (Rst(),)), Cut(at + 2, (Rst(),))]),
            ("resume", "resume"),
            answer,
        ),
        RecoveryScenario(
            f"{PREFIX}{r}/resume-after-keepalive-stall",
            r,
            "a stall kept alive by keepalives: the idle watchdog fires, the stream is re-attached",
            _resume(text, [Cut(at, (Keepalive(0.05, 40), Fin()))]),
            ("resume",),
            answer,
            config={"idle_timeout": 0.3},
        ),
        RecoveryScenario(
            f"{PREFIX}{r}/resume-mid-tool-arguments",
            r,
            "cut while the model wrote a call's arguments: resumed to one whole call",
            _resume(call, [Cut(in_args, (Rst(),))]),
            ("resume",),
            "Saving it.",
            (("write_file", _ARGS),),
        ),
        RecoveryScenario(
            f"{PREFIX}{r}/resume-refused-too-old-then-continue",
            r,
            "the provider will not stream the response again (too old): continued with what was shown",
            _resume(text, [Cut(at)], ResumeRefusal.TOO_OLD, rest),
            ("resume", "continue"),
            answer,
            confirm=Recovery.CONTINUE,
        ),
        RecoveryScenario(
            f"{PREFIX}{r}/resume-refused-not-background-then-replay",
            r,
            "the provider says the response is not in background mode: replayed, as the agent chose",
            _resume(text, [Cut(at)], ResumeRefusal.NOT_BACKGROUND, text),
            ("resume", "replay"),
            answer,
            confirm=Recovery.REPLAY,
        ),
        RecoveryScenario(
            f"{PREFIX}{r}/resume-refused-unknown-id-before-text",
            r,
            "unknown response id after reasoning only: a fresh request, nothing shown twice",
            _resume(
                text_stream(r, list(_ANSWER), reasoning=["Let me think."]),
                [Cut(5)],
                ResumeRefusal.UNKNOWN_ID,
                text_stream(r, list(_ANSWER), reasoning=["Let me think."]),
            ),
            ("resume", "retry"),
            answer,
        ),
    ]
    formats: tuple[Format, ...] = ("anthropic", "openai-chat", "gemini")
    shown = "".join(_ANSWER[:2])
    for fmt in formats:
        frames = text_stream(fmt, list(_ANSWER))
        cut = _index(frames, b"brown fox") + 1
        out.append(
            RecoveryScenario(
                f"{PREFIX}{fmt}/continue-after-text-cut",
                fmt,
                "no resume cursor: a request carrying the text shown, and only the rest is read",
                _continue(frames[:cut], (Rst(),), text_stream(fmt, [answer[len(shown) :]])),
                ("continue",),
                answer,
                confirm=Recovery.CONTINUE,
            )
        )
    a: Format = "anthropic"
    frames = text_stream(a, list(_ANSWER))
    cut = _index(frames, b"brown fox") + 1
    out += [
        RecoveryScenario(
            f"{PREFIX}{a}/continue-on-a-model-without-prefill",
            a,
            "a model that refuses assistant prefill (Claude 4.6 and later): continued by instruction",
            _continue(frames[:cut], (Rst(),), text_stream(a, [answer[len(shown) :]]), refuses_prefill=True),
            ("continue",),
            answer,
            confirm=Recovery.CONTINUE,
        ),
        RecoveryScenario(
            f"{PREFIX}{a}/prefill-refused-then-instruction",
            a,
            "a prefill asked for, refused by the model (400): continued once more, by instruction",
            _continue(frames[:cut], (Rst(),), text_stream(a, [answer[len(shown) :]]), refuses_prefill=True),
            ("continue", "continue"),
            answer,
            confirm=Recovery.CONTINUE,
            continue_with=ContinueStyle.PREFILL,
        ),
        RecoveryScenario(
            f"{PREFIX}{a}/continue-by-prefill-when-asked",
            a,
            "a prefill asked for, on a model that takes one: the answer goes on from its last character",
            # The prefill leaves out the trailing space; the model writes it again, shown once.
            _continue(frames[:cut], (Rst(),), text_stream(a, [answer[len(shown.rstrip()) :]])),
            ("continue",),
            answer,
            confirm=Recovery.CONTINUE,
            continue_with=ContinueStyle.PREFILL,
        ),
    ]
    for fmt in formats[:2]:
        frames = tool_call_stream(fmt, [("write_file", _ARGS)], text=["Saving it."])
        cut = _first(fmt, frames, ToolInputDelta) + 2  # a few pieces of the arguments in
        out.append(
            RecoveryScenario(
                f"{PREFIX}{fmt}/continue-discards-a-cut-call",
                fmt,
                "cut mid-arguments after text: the call is dropped and requested again whole",
                _continue(frames[:cut], (Fin(),), build(fmt, [("tool", "write_file", _ARGS)])),
                ("continue",),
                "Saving it.",
                (("write_file", _ARGS),),
                confirm=Recovery.CONTINUE,
            )
        )
    return out


def recovery_catalog(
    names: Iterable[str] | None = None, formats: Iterable[str] | None = None
) -> list[RecoveryScenario]:
    """The recovery scenarios, optionally those matching any of ``names`` (shell patterns) or ``formats``."""
    patterns, wanted = list(names or ()), set(formats or ())
    return [
        s
        for s in _scenarios()
        if (not patterns or any(fnmatch.fnmatchcase(s.name, p) for p in patterns))
        and (not wanted or s.format in wanted)
    ]


def _problems(scenario: RecoveryScenario, run: RetryingRun, received: list[Any]) -> list[str]:
    problems = []
    chain = tuple(str(link.next) for link in run.attempts[:-1])
    if chain != scenario.chain:
        problems.append(f"chain: expected {'/'.join(scenario.chain)}, got {'/'.join(chain) or '-'}")
    restarts = [i for i, e in enumerate(received) if isinstance(e, Restarted)]
    received = received[restarts[-1] + 1 :] if restarts else received  # a replay: the screen starts afresh
    text = "".join(e.text for e in received if isinstance(e, TextDelta))
    if text != scenario.text:
        problems.append(
            f"the consumer read {len(text)} characters, not the {len(scenario.text)} of the answer"
        )
    calls = tuple((e.name, e.arguments) for e in received if isinstance(e, ToolCall))
    if calls != scenario.calls:
        problems.append(f"tool calls: expected {len(scenario.calls)} whole, got {len(calls)}")
    continued = [e for e in received if isinstance(e, Continued)]
    # One per confirmed continuation; an automatic one (a retry, a refused prefill sent again) shows nothing.
    confirmed = [a for a in run.attempts if a.next == "continue" and a.decision == "confirmed_retry"]
    if len(continued) != len(confirmed) or (scenario.chain.count("continue") and not confirmed):
        problems.append("a Continued event is missing or doubled")
    record = run.record
    if record is None or record["outcome"]["class"] != scenario.ends.value:
        problems.append(
            f"ends as {record['outcome']['class'] if record else 'no record'}, not {scenario.ends.value}"
        )
    return problems


def _resumable(fmt: str) -> Mapping[str, Any]:
    """What a request of ``fmt`` adds so that the provider keeps its stream to resume (nothing: it has no
    cursor)."""
    resume = format_named(fmt).resume
    return resume.request if resume is not None else {}


async def run_recovery(
    scenario: RecoveryScenario, *, timeout: float = DEFAULT_TIMEOUT_S, config: StreamConfig | None = None
) -> tuple[Outcome, tuple[RunRecord, ...]]:
    """Play ``scenario`` on a fault server of its own; its outcome (read from the chain's last record) and
    every attempt's record."""
    config = (config or StreamConfig()).replace(**scenario.config)
    body = {
        **BODIES[scenario.format],
        **_resumable(scenario.format),
    }
    choice = scenario.confirm

    def confirm(diagnosis: Diagnosis, offer: Offer) -> Recovery | None:
        return choice if choice in offer.recoveries else None

    received: list[Any] = []
    problems: list[str] = []
    started = time.monotonic()
    run: RetryingRun | None = None
    async with FaultServer(scenario.router()) as server:

        def open_attempt(ids: Ids) -> Run:
            return open_stream(scenario.format, base_url=server.base_url, json=body, config=config, ids=ids)

        context = {"scenario": scenario.name, "harness_path": "runtime"}
        policy = RetryPolicy(6, timeout, initial_delay_s=0.001, max_delay_s=0.01)
        try:
            with anyio.fail_after(timeout):
                run = retrying(
                    policy,
                    open_attempt,
                    confirm=None if choice is None else confirm,
                    ids={"context": context},
                    continue_with=scenario.continue_with,
                )
                async with run:
                    async for event in run:
                        received.append(event)
        except StreamFailed:
            pass
        except TimeoutError:
            problems.append(f"the chain did not end within the harness bound of {timeout:g} s")
    assert run is not None
    problems += _problems(scenario, run, received)
    record = run.record
    outcome, retry = (record["outcome"], record["retry"]) if record is not None else ({}, {})
    return (
        Outcome(
            name=scenario.name,
            format=scenario.format,
            via="runtime",
            state=outcome.get("state"),
            edge=Trigger(outcome["edge"]) if outcome.get("edge") else None,
            failure_class=FailureClass(outcome["class"]) if outcome else None,
            verdict=Verdict(retry["verdict"]) if retry else None,
            action=Action(retry["action"]) if retry else None,
            phase=Phase(outcome["phase"]) if outcome.get("phase") else None,
            cause=outcome.get("cause"),
            title=f"{'/'.join(scenario.chain)}: {scenario.description}",
            matched=not problems,
            mismatch="; ".join(problems) or None,
            record=record,
            seconds=time.monotonic() - started,
            started=started,
        ),
        run.records,
    )
