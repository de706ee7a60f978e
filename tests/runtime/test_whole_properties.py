"""The whole-body framing of non-streaming calls (``runtime/core/_whole.py``), as Hypothesis properties over
every
format's answer: any cut point of a valid JSON answer, ended cleanly or by a reset, is a failure and hands
out nothing; the whole answer, however its bytes are split, completes with the right finish and every tool
call complete. The runs are the tap's (``TapRun``), fed in memory as the tap feeds what the SDK reads."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamfsm.runtime import Ids, StreamConfig
from streamfsm.runtime.core._whole import ANSWER_TOO_LARGE, MAX_ANSWER_BYTES
from streamfsm.tap._run import TapRun
from streamfsm.testing import SSE_FORMATS, whole_answer
from streamfsm.wire import TextDelta, ToolCall

_CONFIG = StreamConfig(idle_timeout=None, first_token_timeout=None, total_timeout=None)
_JSON = {"content-type": "application/json"}
texts = st.text(min_size=1, max_size=40)
arguments = st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=3)
tools = st.lists(st.tuples(st.sampled_from(["read_file", "grep"]), arguments.map(json.dumps)), max_size=3)


def play(fmt: str, body: bytes, cuts: Sequence[int], fault: str | None) -> tuple[TapRun, list[Any]]:
    """Feed ``body`` in pieces split at ``cuts``, then end it cleanly (``fault`` None or "eof") or with a
    reset ("rst"). Returns the ended run and every event it gave."""
    run = TapRun(fmt, body={}, url="http://127.0.0.1/", config=_CONFIG, ids=Ids(), asks_stream=False)
    run.collect()
    events = run.keep_events()
    run.begin()
    run.connected(200, _JSON)
    start = 0
    for cut in [*sorted(c for c in set(cuts) if 0 < c < len(body)), len(body)]:
        assert run.chunk(body[start:cut]) is None  # nothing is read before the end
        start = cut
    if fault == "rst":
        run.read_failed(ConnectionResetError(104, "Connection reset by peer"))
    else:
        run.chunk(None)
    run.end()
    return run, list(events)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SSE_FORMATS), texts, tools, st.data())
def test_any_cut_of_a_valid_answer_is_a_failure_that_hands_out_nothing(
    fmt: str, text: str, calls: list[tuple[str, str]], data: st.DataObject
) -> None:
    body = whole_answer(fmt, text, tools=calls)  # type: ignore[arg-type]
    stop = data.draw(st.integers(0, len(body) - 1), label="stop")
    cuts = data.draw(st.lists(st.integers(1, max(1, stop)), max_size=5), label="cuts")
    run, events = play(fmt, body[:stop], cuts, data.draw(st.sampled_from(["eof", "rst"]), label="fault"))
    assert run.record is not None and run.failure is not None
    assert not run.record["outcome"]["summary_key"].startswith("completed")
    assert not any(isinstance(event, (TextDelta, ToolCall)) for event in events)
    assert run.record["request"]["streaming"] is False


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SSE_FORMATS), texts, tools, st.data())
def test_a_whole_answer_completes_with_its_finish_and_complete_calls(
    fmt: str, text: str, calls: list[tuple[str, str]], data: st.DataObject
) -> None:
    body = whole_answer(fmt, text, tools=calls)  # type: ignore[arg-type]
    cuts = data.draw(st.lists(st.integers(1, len(body)), max_size=8), label="cuts")
    run, events = play(fmt, body, cuts, None)
    assert run.record is not None and run.failure is None
    assert run.record["outcome"]["summary_key"] == "completed.finished"
    assert run.record["finish_reason"]["unified"] == ("tool_calls" if calls else "stop")
    handed = [event for event in events if isinstance(event, ToolCall)]
    assert [(call.name, json.loads(call.arguments)) for call in handed] == [
        (name, json.loads(args)) for name, args in calls
    ]
    assert "".join(event.text for event in events if isinstance(event, TextDelta)) == text


def test_an_answer_over_its_bound_fails_the_run_and_is_kept_no_further() -> None:
    # The SDK reads on past the bound, and the run lives as long as its response: what it had kept goes.
    run = TapRun(
        "openai-chat", body={}, url="http://127.0.0.1/", config=_CONFIG, ids=Ids(), asks_stream=False
    )
    run.begin()
    run.connected(200, _JSON)
    piece = b" " * (8 << 20)
    failure = None
    for _ in range(MAX_ANSWER_BYTES // len(piece) + 1):
        failure = run.chunk(piece)
        if failure is not None:
            break
    assert failure is not None and ANSWER_TOO_LARGE in str(run.record["outcome"])
    assert run.core.wire is None  # the run let go of its wire, and of what it had kept
