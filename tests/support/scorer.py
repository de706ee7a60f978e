"""Play a set of held-out shapes over real loopback sockets through ``streamfsm.open_stream`` and check
their predicates: the machinery of issue 29's set (``tests/heldout``) and issue 33's (``tests/fresh``).
Every function takes the set (or the shape) it plays, and the predicates a shape's ``Expect`` does not define
are not checked. ``python -m tests.heldout`` (or ``tests.fresh``) prints one row per shape and ``score: N/M``;
the pytest files use `check` per shape."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import httpx
import pytest

from streamfsm import FailureClass, StreamFailed, TextDelta, ToolCall, Verdict, open_stream
from streamfsm.runtime import StreamConfig
from streamfsm.testing import BODIES, FaultServer, Scenario, ScenarioRouter, Step, scenario_url

RUN_BOUND_S = 10.0  # every run ends within this, on top of its own watchdogs
LONGEST_PROVIDER_WAIT_S = (
    60.0  # RetryPolicy().max_provider_delay_s: a longer stated wait is no automatic retry
)
CONFIG = StreamConfig(connect_timeout=5.0, first_token_timeout=5.0, idle_timeout=5.0, total_timeout=8.0)


class Shape(Protocol):
    """One row of a held-out set: what the scorer reads of it (each set's ``Shape`` has these)."""

    @property
    def id(self) -> str: ...
    @property
    def root(self) -> str: ...  # the group the report counts it in
    @property
    def format(self) -> str: ...
    @property
    def script(self) -> tuple[Step, ...]: ...
    @property
    def expect(self) -> Any: ...


@dataclass
class Observed:
    summary_key: str = "?"
    failure_class: str = "?"
    verdict: str = "?"
    cause: str = "?"
    evidence: tuple[str, ...] = ()
    retry_after_s: float | None = None
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)  # callable ones: what an agent would execute
    server_calls: int = 0  # calls the provider ran itself (handed out as informational)
    finish_unified: str | None = None
    output_tokens: int | None = None
    error: str | None = None  # the run did not end as a run should (a bug in the harness or a hang)

    def kind(self) -> str | None:
        """The provider error kind the run reports, wherever it reports one."""
        if self.failure_class == FailureClass.PROVIDER_ERROR.value:
            return self.cause
        for item in self.evidence:
            if item.startswith("provider="):
                return item.partition("=")[2]
        return None

    def brief(self) -> str:
        if self.error:
            return f"error: {self.error}"
        parts = [self.summary_key, self.verdict]
        if self.retry_after_s is not None:
            parts.append(f"retry_after={self.retry_after_s:g}s")
        parts.append(f"text={len(self.text)}ch")
        if self.finish_unified is not None:
            parts.append(f"finish={self.finish_unified}")
        if self.calls:
            parts.append("calls=" + ",".join(f"{c.name}({len(c.arguments)}ch)" for c in self.calls))
        if self.server_calls:
            parts.append(f"server_calls={self.server_calls}")
        return " ".join(parts)


def _parses(arguments: str) -> bool:
    try:
        json.loads(arguments)
    except (ValueError, TypeError):
        return False
    return True


def incomplete_calls(expect: object, calls: Sequence[tuple[str, str]]) -> list[str]:
    """The names of (name, input) calls whose input is incomplete by its tool kind's grammar: a custom
    (freeform) tool named in ``expect.freeform`` must carry exactly the input its done event gave; every
    other call's input must parse as JSON."""
    freeform = dict(getattr(expect, "freeform", ()))
    bad = []
    for name, arguments in calls:
        complete = arguments == freeform[name] if name in freeform else _parses(arguments)
        if not complete:
            bad.append(name)
    return bad


def judge(shape: Shape, seen: Observed) -> list[str]:
    """The predicates of ``shape`` that ``seen`` breaks, in words (empty: it passes)."""
    if seen.error:
        return [seen.error]
    e = shape.expect
    misses: list[str] = []
    whole = seen.summary_key == "completed.finished"
    if e.whole is not None and whole != e.whole:
        misses.append("called a whole answer" if whole else "not called a whole answer")
    failed = seen.failure_class != FailureClass.COMPLETED.value
    if e.failed is not None and failed != e.failed:
        misses.append("reported as a failure" if failed else "not reported as a failure")
    if e.verdicts is not None and seen.verdict not in e.verdicts:
        misses.append(f"verdict {seen.verdict} not in {sorted(e.verdicts)}")
    if e.kind is not None and seen.kind() != e.kind:
        misses.append(f"kind {seen.kind()} != {e.kind}")
    prefix = getattr(e, "key_prefix", None)
    if prefix is not None and not seen.summary_key.startswith(prefix):
        misses.append(f"summary key not {prefix}.*")
    if e.tool_calls is not None and len(seen.calls) != e.tool_calls:
        misses.append(f"{len(seen.calls)} tool calls != {e.tool_calls}")
    if e.max_tool_calls is not None and len(seen.calls) > e.max_tool_calls:
        misses.append(f"{len(seen.calls)} tool calls > {e.max_tool_calls}")
    if e.tool_names is not None and tuple(c.name for c in seen.calls) != e.tool_names:
        misses.append(f"tool names {[c.name for c in seen.calls]} != {list(e.tool_names)}")
    if e.text is not None and bool(seen.text) != e.text:
        misses.append("text delivered" if seen.text else "no text delivered")
    if e.not_auto_soon and seen.verdict == Verdict.SAFE_AUTO_RETRY.value:
        wait = seen.retry_after_s
        if wait is None or wait <= LONGEST_PROVIDER_WAIT_S:
            misses.append(f"safe_auto_retry within {LONGEST_PROVIDER_WAIT_S:g} s (retry_after={wait})")
    finish = getattr(e, "finish", None)
    if finish is not None and seen.finish_unified != finish:
        misses.append(f"unified finish {seen.finish_unified} != {finish}")
    tokens = getattr(e, "output_tokens", None)
    if tokens is not None and seen.output_tokens != tokens:
        misses.append(f"output tokens {seen.output_tokens} != {tokens}")
    window = getattr(e, "retry_after", None)
    if window is not None:
        low, high = window
        if seen.retry_after_s is None or not low <= seen.retry_after_s <= high:
            misses.append(f"retry_after {seen.retry_after_s} not in [{low:g}, {high:g}] s")
    # One truth for every shape: a ToolCall is callable, so its input is complete by its kind's grammar.
    bad = incomplete_calls(e, [(c.name, c.arguments) for c in seen.calls])
    if bad:
        misses.append(f"ToolCall with incomplete input: {bad}")
    return misses


def expected_text(shape: Shape) -> str:
    e = shape.expect
    out: list[str] = []
    if e.whole is not None:
        out.append("whole" if e.whole else "not whole")
    if e.failed is not None:
        out.append("failure" if e.failed else "completion")
    if e.verdicts is not None:
        out.append("/".join(sorted(e.verdicts)))
    if e.kind is not None:
        out.append(f"kind={e.kind}")
    if getattr(e, "key_prefix", None) is not None:
        out.append(f"{e.key_prefix}.*")
    if e.tool_calls is not None:
        out.append(f"calls={e.tool_calls}")
    if e.max_tool_calls is not None:
        out.append(f"calls<={e.max_tool_calls}")
    if e.tool_names is not None:
        out.append("names=" + ",".join(e.tool_names))
    if e.text is not None:
        out.append("text" if e.text else "no text")
    if e.not_auto_soon:
        out.append("no auto retry <=60s")
    if getattr(e, "retry_after", None) is not None:
        out.append("retry_after in [{:g}, {:g}]".format(*e.retry_after))
    if getattr(e, "freeform", ()):
        out.append("freeform=" + ",".join(name for name, _ in e.freeform))
    if getattr(e, "finish", None) is not None:
        out.append(f"finish={e.finish}")
    if getattr(e, "output_tokens", None) is not None:
        out.append(f"out_tokens={e.output_tokens}")
    return " ".join(out)


async def observe(shape: Shape, server_url: str, client: httpx.AsyncClient) -> Observed:
    seen = Observed()
    run = open_stream(
        shape.format,
        base_url=scenario_url(server_url, shape.id),
        json=BODIES[shape.format],
        client=client,
        config=CONFIG,
    )
    pieces: list[str] = []
    try:
        with anyio.fail_after(RUN_BOUND_S):
            try:
                async with run:
                    async for event in run.collect():
                        if isinstance(event, TextDelta) and not event.refusal:
                            pieces.append(event.text)
                        elif isinstance(event, ToolCall) and event.server_side:
                            seen.server_calls += 1
                        elif isinstance(event, ToolCall):
                            seen.calls.append(event)
            except StreamFailed:
                pass
    except TimeoutError:
        seen.error = f"the run did not end within {RUN_BOUND_S:g} s"
        return seen
    diagnosis = run.diagnosis
    if diagnosis is None:
        seen.error = "the run left no diagnosis"
        return seen
    seen.summary_key = diagnosis.summary_key
    seen.failure_class = diagnosis.failure_class.value
    seen.verdict = diagnosis.verdict.value
    seen.cause = diagnosis.cause
    seen.evidence = tuple(diagnosis.evidence)
    seen.retry_after_s = diagnosis.retry_after_s
    seen.text = "".join(pieces)
    try:  # result() holds the same calls the events did; a difference would be a second channel to check
        result_calls = run.result().tool_calls
    except RuntimeError:
        result_calls = ()
    for call in result_calls:
        if call not in seen.calls and not call.server_side:
            seen.calls.append(call)
    record = run.record
    if record is not None:  # read defensively: a record may grow or rename sections
        seen.finish_unified = (record.get("finish_reason") or {}).get("unified")
        seen.output_tokens = (record.get("tokens") or {}).get("output")
    return seen


def router(shapes: Sequence[Shape]) -> ScenarioRouter:
    return ScenarioRouter(Scenario(s.id, s.script, format=s.format) for s in shapes)


async def observe_all(shapes: Sequence[Shape]) -> list[tuple[Shape, Observed]]:
    """Each shape once, one at a time, against one fault server."""
    out: list[tuple[Shape, Observed]] = []
    async with FaultServer(router(shapes)) as server:
        async with httpx.AsyncClient(trust_env=False, timeout=RUN_BOUND_S) as client:
            for shape in shapes:
                out.append((shape, await observe(shape, server.base_url, client)))
    return out


def check(shape: Shape, backend: str = "asyncio") -> list[str]:
    """Play one shape on a fault server of its own, on ``backend``; the misses in words."""
    ((_, seen),) = anyio.run(observe_all, [shape], backend=backend)
    return judge(shape, seen)


def param(shape: Shape, known_misses: dict[str, str]) -> Any:
    """``shape`` as a pytest parameter: a strict xfail, with its reason, where it is a known miss."""
    why = known_misses.get(shape.id)
    marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
    return pytest.param(shape, id=shape.id, marks=marks)


def main(argv: Sequence[str], shapes: Sequence[Shape]) -> int:
    """``-v``: show every row's observation; ``--trio``: play on trio instead of asyncio."""
    results = anyio.run(observe_all, shapes, backend="trio" if "--trio" in argv else "asyncio")
    report(results, judge, "-v" in argv)
    return 0


def report(
    results: Sequence[tuple[Shape, Any]],
    judged: Callable[[Shape, Any], list[str]],
    verbose: bool,
) -> dict[str, tuple[int, int]]:
    """Print one row per shape, the misses by group and ``score: N/M``; (passed, total) per group."""
    passed = 0
    per_group: dict[str, tuple[int, int]] = {}
    misses_by_root: dict[str, list[str]] = {}
    width = max(len(s.id) for s, _ in results)
    for shape, seen in results:
        misses = judged(shape, seen)
        ok = not misses
        passed += ok
        done, count = per_group.get(shape.root, (0, 0))
        per_group[shape.root] = (done + ok, count + 1)
        if not ok:
            misses_by_root.setdefault(shape.root, []).append(shape.id)
        mark = "pass" if ok else "MISS"
        print(f"{mark:4}  {shape.root:7} {shape.id:{width}}  expected: {expected_text(shape)}")
        if not ok or verbose:
            print(f"{'':14}{'':{width}}  got:      {seen.brief()}")
            for miss in misses:
                print(f"{'':14}{'':{width}}  - {miss}")
    total = len(results)
    print()
    for root, ids in misses_by_root.items():
        print(f"misses in {root}: {len(ids)}: {', '.join(ids)}")
    for group, (done, count) in per_group.items():
        print(f"{group}: {done}/{count}")
    print(f"score: {passed}/{total}")
    return per_group
