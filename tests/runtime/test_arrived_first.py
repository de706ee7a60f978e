"""Decide from what arrived, not from the clock alone (issue 25 item 2; DESIGN 12 rule 4).

A loop held by another task longer than the idle timeout runs its timers and its reads in the same pass once
it is free: a FIN or an RST that came in meanwhile must end the run as the cut it is, never as
``watchdog.idle_timeout``. Over real loopback sockets, for ``open_stream`` and the tap (async, both anyio
backends; sync, with the process paused), and, after the terminal event, a transfer that then breaks is
evidence, not a failure: ``open_stream`` and the tap both record the stream as completed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamfsm
from streamfsm import StreamConfig
from streamfsm.runtime import socket_of
from streamfsm.runtime.drivers._watchdog import readable
from streamfsm.tap import async_transport, transport
from streamfsm.testing import End, FaultServer, FaultServerThread, Fin, Headers, Rst, Send, Sleep, text_stream
from tests.support.runs import BODIES

FMT = "openai-chat"
CUT_EDGES = {"disconnected", "eof_without_terminal"}
BACKENDS = ["asyncio", "trio"]
# Each example holds the loop for real: few, short ones.
FEW = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def cut_script(events: int, end: str, gap: float = 0.01) -> tuple[Any, ...]:
    """``events`` text deltas, then ``gap`` s later a FIN or an RST."""
    frames = text_stream(FMT, ["a", "b", "c", "d"])[1 : 1 + events]  # the first text deltas, no finish
    return (Headers(), *(Send(f) for f in frames), Sleep(gap), Fin() if end == "fin" else Rst())


async def via_open_stream(url: str, config: StreamConfig) -> dict[str, Any]:
    try:
        async with streamfsm.open_stream(FMT, base_url=url, json=BODIES[FMT], config=config) as run:
            async for _ in run:
                pass
    except streamfsm.StreamFailed:
        pass
    record = run.record
    assert record is not None
    return dict(record)


async def via_async_tap(url: str, config: StreamConfig) -> dict[str, Any]:
    records: list[Any] = []
    tap = async_transport(
        httpx.AsyncHTTPTransport(), http="httpx", config=config.replace(sinks=(records.append,))
    )
    async with httpx.AsyncClient(transport=tap) as client:
        try:
            body = {**BODIES[FMT], "stream": True}
            async with client.stream("POST", url + "/v1/chat/completions", json=body) as response:
                async for _ in response.aiter_raw():
                    pass
        except httpx.HTTPError:
            pass
    (record,) = records
    return dict(record)


SOURCES = {"open_stream": via_open_stream, "tap": via_async_tap}


async def stalled_run(source: str, steps: tuple[Any, ...], idle: float, after: float, stall: float) -> Any:
    """The run's record while another task holds the loop for ``stall`` s, ``after`` s into the stream."""

    async def hold_the_loop() -> None:
        await anyio.sleep(after)
        time.sleep(stall)  # the point: a task that does not yield

    # The upstream on a loop of its own (as it would be on a host of its own): the stall holds the client's.
    with FaultServerThread(steps) as server:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(hold_the_loop)
            with anyio.fail_after(10):
                return await SOURCES[source](server.base_url, StreamConfig(idle_timeout=idle))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("end", ["fin", "rst"])
def test_the_issues_reproduction_is_a_cut(backend: str, source: str, end: str) -> None:
    """2 events, the FIN (or RST) 10 ms later, another task holds the loop 1.5 s, idle timeout 1 s."""
    record = anyio.run(stalled_run, source, cut_script(2, end), 1.0, 0.005, 1.5, backend=backend)
    assert record["outcome"]["edge"] in CUT_EDGES, record["outcome"]
    assert record["watchdog"]["fired"] is None


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("end", ["fin", "rst", "silence"])
def test_an_async_connections_socket_says_what_waits_in_it(backend: str, end: str) -> None:
    """The looks ask the connection's socket (asyncio's and trio's stand-ins for it on a loop) whether a
    read would return: after a FIN or an RST it would, in silence it would not."""

    async def main() -> bool:
        tail = {"fin": Fin(), "rst": Rst(), "silence": Sleep(3.0)}[end]
        async with FaultServer((Headers(), Sleep(0.05), tail)) as server, httpx.AsyncClient() as client:
            async with client.stream("POST", server.base_url + "/v1/chat/completions", json={}) as response:
                sock = socket_of(response)
                assert sock is not None
                await anyio.sleep(0.3)  # nothing reads the body meanwhile
                return readable(sock)

    assert anyio.run(main, backend=backend) is (end != "silence")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("source", SOURCES)
@FEW
@given(
    events=st.integers(1, 3),
    end=st.sampled_from(["fin", "rst"]),
    idle=st.sampled_from([0.1, 0.15, 0.2]),
    gap=st.floats(0.005, 0.1),
    after=st.floats(0.0, 0.03),
    extra=st.floats(0.1, 0.3),
)
def test_a_cut_stays_a_cut_whatever_holds_the_loop(
    backend: str, source: str, events: int, end: str, idle: float, gap: float, after: float, extra: float
) -> None:
    """Property: a loop-blocking stall at a random point before the cut, longer than the idle timeout."""
    steps = cut_script(events, end, gap)
    record = anyio.run(stalled_run, source, steps, idle, after, idle + extra, backend=backend)
    assert record["outcome"]["edge"] in CUT_EDGES, record["outcome"]
    assert record["watchdog"]["fired"] is None


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("source", SOURCES)
def test_silence_is_still_silence(backend: str, source: str) -> None:
    """The looks at what arrived do not keep a silent stream alive: it times out, about when it should."""
    steps = (Headers(), Send(text_stream(FMT, ["a"])[1]), Sleep(3.0), Fin())
    started = time.monotonic()
    record = anyio.run(stalled_run, source, steps, 0.2, 0.0, 0.0, backend=backend)
    assert record["outcome"]["edge"] == "idle_timeout"
    assert record["watchdog"]["fired"] == "idle_timeout"
    assert time.monotonic() - started < 2.5  # generous: well before the upstream's own FIN at 3 s


# -- sync: the process paused ------------------------------------------------------------------------------


# The upstream in a process of its own: a server thread here would wait for the GIL like everyone else.
UPSTREAM = """
import sys
from streamfsm.testing import text_stream
from streamfsm.testing._script import End, Fin, Headers, Rst, Send, Sleep
from streamfsm.testing._server import FaultServerThread
end, gap = sys.argv[1], float(sys.argv[2])
frames = text_stream("openai-chat", ["a", "b"])[1:3]
steps = (Headers(), *(Send(f) for f in frames), Sleep(gap), Fin() if end == "fin" else Rst())
with FaultServerThread(steps) as server:
    print(server.port, flush=True)
    sys.stdin.read()
"""


@contextmanager
def upstream_process(end: str, gap: float) -> Iterator[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", UPSTREAM, end, str(gap)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield f"http://127.0.0.1:{int(child.stdout.readline())}"
    finally:
        child.communicate(timeout=10)


PAUSE = """
import os, signal, sys, time
pid = int(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
os.kill(pid, signal.SIGSTOP)
time.sleep(0.6)
os.kill(pid, signal.SIGCONT)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="pauses this process with SIGSTOP")
@pytest.mark.parametrize("end", ["fin", "rst"])
def test_the_sync_tap_reads_what_arrived_while_the_process_was_paused(end: str) -> None:
    """The whole process is paused (SIGSTOP: a VM pause, a swap storm) from the first chunk on, across the
    idle deadline, and the cut comes meanwhile: when the threads run again, the reader's and the watchdog's
    waits are both over, and what is in the socket decides."""
    body = {**BODIES[FMT], "stream": True}
    with upstream_process(end, gap=0.45) as url:
        for _ in range(3):
            records: list[Any] = []
            config = StreamConfig(idle_timeout=0.3, sinks=(records.append,))
            pause = subprocess.Popen(
                [sys.executable, "-c", PAUSE, str(os.getpid())], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
            assert pause.stdin is not None and pause.stdout is not None
            try:
                assert pause.stdout.readline() == b"ready\n"
                with httpx.Client(
                    transport=transport(httpx.HTTPTransport(), http="httpx", config=config)
                ) as client:
                    with client.stream("POST", url + "/v1/chat/completions", json=body) as response:
                        chunks = response.iter_raw()
                        next(chunks)
                        pause.stdin.write(b"go\n")  # paused from here for 0.6 s
                        pause.stdin.flush()
                        with pytest.raises(httpx.HTTPError):
                            for _ in chunks:
                                pass
            finally:
                pause.communicate(timeout=10)
            (record,) = records
            assert record["outcome"]["edge"] in CUT_EDGES, record["outcome"]
            assert record["watchdog"]["fired"] is None


# -- after the terminal event, a broken transfer is evidence, not a failure ----------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("end", ["fin", "rst"])
def test_a_whole_answer_whose_transfer_then_breaks_is_completed(backend: str, source: str, end: str) -> None:
    """``data: [DONE]``, then the connection ends without the chunked terminator: open_stream and the tap
    agree with the relay (tests/relay/test_relay_bounds.py) that the run completed."""
    frames = text_stream(FMT, ["a", "b"])
    steps = (Headers(), *(Send(f) for f in frames), Fin() if end == "fin" else Rst())
    record = anyio.run(stalled_run, source, steps, 5.0, 0.0, 0.0, backend=backend)
    assert record["outcome"]["class"] == "completed", record["outcome"]
    assert record["outcome"]["summary_key"] == "completed.finished"


# -- the looks hold off no deadline for good -----------------------------------------------------------------


def busy_script() -> tuple[Any, ...]:
    """A stream that never pauses: a text delta every 2 ms for about 2 s, then the rest of the answer."""
    frames = text_stream(FMT, ["x"] * 3)
    delta = frames[1]
    return (Headers(), Send(frames[0]), *(x for _ in range(1000) for x in (Send(delta), Sleep(0.002))), End())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("source", SOURCES)
def test_the_total_deadline_ends_a_stream_that_never_pauses(backend: str, source: str) -> None:
    async def run() -> Any:
        async with FaultServer(busy_script()) as server:
            with anyio.fail_after(10):
                return await SOURCES[source](server.base_url, StreamConfig(total_timeout=0.3))

    record = anyio.run(run, backend=backend)
    assert record["watchdog"]["fired"] == "total_timeout", record["outcome"]


def test_the_total_deadline_ends_a_sync_stream_that_never_pauses() -> None:
    from streamfsm.testing import FaultServerThread

    records: list[Any] = []
    config = StreamConfig(total_timeout=0.3, sinks=(records.append,))
    with FaultServerThread(busy_script()) as server:
        with httpx.Client(transport=transport(httpx.HTTPTransport(), http="httpx", config=config)) as client:
            body = {**BODIES[FMT], "stream": True}
            with pytest.raises(httpx.HTTPError):
                with client.stream("POST", server.base_url + "/v1/chat/completions", json=body) as response:
                    for _ in response.iter_raw():
                        pass
    (record,) = records
    assert record["watchdog"]["fired"] == "total_timeout", record["outcome"]
