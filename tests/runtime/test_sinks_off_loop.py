"""Sinks never stall the event loop: a log lock held by another process, a slow sink of the user's.

Real runs over loopback sockets; the lock is held by a real second process. Bounds are watchdogs, far
above what the fixed code takes (a few ms) and far below what the faults cost (seconds).
"""

from __future__ import annotations

import itertools
import json
import logging
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

import streamfsm
from streamfsm import StreamConfig
from streamfsm.runtime import AuditLog, BackgroundSink, RunRecord, sink_failures
from streamfsm.runtime.records._sinks import Sink
from streamfsm.testing import End, FaultServer, Headers, Send, text_stream
from tests.support.runs import BODIES

pytestmark = pytest.mark.anyio

FRAMES = text_stream("openai-chat", ["Hello", " world"])
HOLD_S = 5.0  # how long the other process holds the lock unless told to let go
PROMPT_S = 0.5  # a run, sinks included, ends within this while the lock is held

# Takes the lock, says so, and holds it until its stdin closes or HOLD_S pass.
HOLDER = """
import fcntl, os, select, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
select.select([sys.stdin], [], [], float(sys.argv[2]))
"""


@contextmanager
def lock_held_elsewhere(log: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holds ``<log>.lock``; leaving the block (or closing its stdin) lets go."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, f"{log}.lock", str(HOLD_S)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready and proc.stdout.readline() == "locked\n"
        yield proc
    finally:
        release(proc)


def release(proc: subprocess.Popen[str]) -> None:
    if proc.stdin is not None and not proc.stdin.closed:
        proc.stdin.close()
    try:
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


async def timed_run(sinks: tuple[Sink, ...]) -> tuple[float, str]:
    """One finished run over loopback; the seconds its ``async with`` took, sinks included, and its id."""
    async with FaultServer((Headers(), *(Send(f) for f in FRAMES), End())) as server:
        started = time.monotonic()
        async with streamfsm.open_stream(
            "openai-chat",
            base_url=server.base_url,
            json=BODIES["openai-chat"],
            config=StreamConfig(sinks=sinks),
        ) as run:
            async for _ in run:
                pass
        return time.monotonic() - started, run.run_id


def run_ids(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["ids"]["run_id"] for line in path.read_text(encoding="utf-8").splitlines()]


# -- a log lock held by another process --------------------------------------------------------------------


async def test_a_lock_held_by_another_process_never_stalls_the_run_nor_drops_its_record(
    tmp_path: Path,
) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    before = sink_failures().get("AuditLog", 0)
    with lock_held_elsewhere(audit.path):
        first_s, first = await timed_run((audit,))
        second_s, second = await timed_run((audit,))
        # Before: each run polled the lock on the loop's thread, then its line waited on a writer thread
        # and was dropped after lock_timeout. Appends take no lock now; only rotation does.
        assert first_s < PROMPT_S and second_s < PROMPT_S, (first_s, second_s)
        assert run_ids(audit.path) == [first, second]  # each exactly once, in order, at once
    assert sink_failures().get("AuditLog", 0) == before


# -- a slow sink of the user's -----------------------------------------------------------------------------

SLOW_S = 1.0


async def test_a_slow_inline_sink_costs_the_run_its_time_and_is_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []

    def slow_sink(record: RunRecord) -> None:
        time.sleep(SLOW_S)  # a blocking call to a collector
        calls.append(record.run_id)

    with caplog.at_level(logging.WARNING, logger="streamfsm.sinks"):
        took, run_id = await timed_run((slow_sink,))
    # The contract: sinks run inline on the loop's thread; a slow one costs every stream its time.
    assert took >= SLOW_S
    assert calls == [run_id]
    assert f"sink {slow_sink.__qualname__} took" in caplog.text
    assert "BackgroundSink" in caplog.text
    assert sink_failures().get(slow_sink.__qualname__, 0) == 0  # slow, not failed


async def test_a_slow_sink_wrapped_in_background_sink_never_stalls_the_loop() -> None:
    calls: list[str] = []

    def slow_sink(record: RunRecord) -> None:
        time.sleep(SLOW_S)
        calls.append(record.run_id)

    wrapped = BackgroundSink(slow_sink)
    ticks: list[float] = []

    async def ticker() -> None:  # the loop's heartbeat while runs end
        while True:
            ticks.append(time.monotonic())
            await anyio.sleep(0.01)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        first_s, first = await timed_run((wrapped,))
        second_s, second = await timed_run((wrapped,))
        await anyio.sleep(0.1)
        tg.cancel_scope.cancel()
    assert first_s < PROMPT_S and second_s < PROMPT_S, (first_s, second_s)
    assert max(b - a for a, b in itertools.pairwise(ticks)) < PROMPT_S
    assert wrapped.flush(3 * SLOW_S + 5)
    assert calls == [first, second]  # each exactly once, in order


def test_background_sink_counts_what_it_drops_and_what_fails(caplog: pytest.LogCaptureFixture) -> None:
    records: list[RunRecord] = []
    anyio.run(timed_run, (records.append,))
    record = records[0]

    def stuck_then_broken(record: RunRecord) -> None:
        time.sleep(0.3)
        raise OSError("collector at https://user:pw@collector.example/ down")

    wrapped = BackgroundSink(stuck_then_broken, max_backlog=1)
    name = stuck_then_broken.__qualname__
    before = sink_failures().get(name, 0)
    with caplog.at_level(logging.WARNING, logger="streamfsm.sinks"):
        wrapped(record)  # taken by the thread
        wrapped(record)  # the backlog (of one, the one being worked on) is full: dropped
        assert wrapped.flush(10)
    assert sink_failures()[name] == before + 2
    assert "backlog of 1 records was full" in caplog.text
    assert "raised OSError" in caplog.text
    assert "pw@" not in caplog.text and "collector.example" not in caplog.text
