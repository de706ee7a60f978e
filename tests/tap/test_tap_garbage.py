"""Tapped streams, however they end, leave nothing of ours to CPython's cyclic collector (see
``tests/runtime/test_garbage.py``): the tap's run, stream and finalizer are freed by reference counting."""

from __future__ import annotations

import gc
import inspect
import time
from collections import Counter
from typing import Any

import pytest

import streamfsm
from streamfsm import StreamConfig
from streamfsm.tap import library
from streamfsm.testing import End, FaultServerThread, Fin, Keepalive, Status, text_stream
from tests.support.runs import left_to_the_collector, script
from tests.support.sdk import FMTS, HTTP, create, sdk_client

# httpx before 0.28.1's fix (encode/httpx#3733) binds each response and its body stream to each other: the
# response the SDK holds waits for the collector, and with it the one stream object the tap gave it (the run
# it held is already let go). httpx2 has no such cycle.
LIBRARY_CYCLE = "response" in inspect.signature(library(HTTP)[0]._client.BoundSyncStream.__init__).parameters
ENDINGS = ("finished", "cut", "stalled", "http-429", "left-early")


def _steps(fmt: str, ending: str) -> tuple[Any, ...]:
    frames = text_stream(fmt, ["one ", "two ", "three"])  # type: ignore[arg-type]
    if ending == "cut":
        return script(frames[:3], Fin())
    if ending == "stalled":
        return script(frames[:3], Keepalive(0.05, 40))
    if ending == "http-429":
        return (Status(429, (("content-type", "application/json"),), b'{"error": {"type": "x"}}'),)
    return script(frames, End())


def _stream(fmt: str, ending: str, client: Any) -> None:
    try:
        for index, _ in enumerate(create(fmt, client)):
            if ending == "left-early" and index == 1:
                break
    except Exception:
        pass


@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize("fmt", FMTS)
def test_a_tapped_stream_leaves_nothing_to_the_collector(fmt: str, ending: str) -> None:
    # The SDK client is cyclic itself (client and resources refer to each other), and holds the tap's
    # transport: it is made outside what is measured. Each stream, however it ends, must not be.
    records: list[streamfsm.RunRecord] = []
    config = StreamConfig(first_token_timeout=0.5, idle_timeout=0.5, sinks=(records.append,))
    with FaultServerThread(_steps(fmt, ending)) as server:
        client = sdk_client(fmt, server.base_url, streamfsm.http_client(http=HTTP, config=config), sync=True)
        try:
            _stream(fmt, ending, client)  # the first stream loads what the libraries load lazily
            left = left_to_the_collector(lambda: _stream(fmt, ending, client))
            allowed = Counter({"TappedStream": 1} if LIBRARY_CYCLE else {})
            assert not left - allowed, left
        finally:
            client.close()
    gc.collect()  # the openai SDK's stream left early is cyclic itself: its response is closed once collected
    deadline = time.monotonic() + 5.0  # a dropped response's record is delivered on a thread of its own
    while len(records) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(records) == 2
