"""Bedrock Converse hands a message's tool calls out at its finish, over a real socket: a call whose input
parses is handed out after ``tool_use``, never after ``malformed_tool_use`` (the provider says the call is
malformed); a tool the provider runs (``type: server_tool_use``) is ``server_side``."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import streamfsm
from streamfsm import ToolCall
from streamfsm.testing import End, FaultServer, Headers, Send
from streamfsm.testing._eventstream import CONTENT_TYPE, converse, converse_event

pytest.importorskip("botocore", reason="the bedrock extra (botocore) is not installed")
pytestmark = pytest.mark.anyio
BOUND_S = 20.0
BODY = {"modelId": "anthropic.claude-haiku-4-5-20251001-v1:0", "messages": [{"role": "user", "content": []}]}


def _frames(stop: str, server: bool = False) -> list[bytes]:
    frames = converse([("text", "Reading it."), ("tool", "read_file", '{"path": "a.txt"}')], (9, 0, 4), None)
    if server:  # the same call, as a tool the provider runs
        start = {"toolUse": {"toolUseId": "tooluse_00kq3x", "name": "read_file", "type": "server_tool_use"}}
        at = next(i for i, f in enumerate(frames) if b"contentBlockStart" in f and b"toolUse" in f)
        frames[at] = converse_event("contentBlockStart", {"contentBlockIndex": 1, "start": start})
    return [*frames[:-2], converse_event("messageStop", {"stopReason": stop}), frames[-1]]


async def _play(frames: list[bytes]) -> tuple[list[Any], Any, str]:
    """The events, the result and the record's summary key."""
    steps = (Headers(headers=(("content-type", CONTENT_TYPE),)), *(Send(f) for f in frames), End())
    seen: list[Any] = []
    async with FaultServer(steps) as server:
        with anyio.fail_after(BOUND_S):
            async with streamfsm.open_stream("bedrock-converse", base_url=server.base_url, json=BODY) as run:
                async for event in run.collect():
                    seen.append(event)
    assert run.record is not None
    return seen, run.result(), run.record.summary_key


async def test_a_call_is_handed_out_at_a_whole_answer_finish() -> None:
    seen, result, key = await _play(_frames("tool_use"))
    calls = [e for e in seen if isinstance(e, ToolCall)]
    assert [(c.name, c.arguments, c.server_side) for c in calls] == [
        ("read_file", '{"path": "a.txt"}', False)
    ]
    assert result.tool_calls == tuple(calls) and key == "completed.finished"


async def test_no_call_is_handed_out_when_the_finish_says_it_is_malformed() -> None:
    seen, result, key = await _play(_frames("malformed_tool_use"))
    assert not [e for e in seen if isinstance(e, ToolCall)] and result.tool_calls == ()
    assert key == "completed.malformed_tool_call"


async def test_a_server_tool_is_the_providers_call() -> None:
    seen, _, _ = await _play(_frames("tool_use", server=True))
    assert [e.server_side for e in seen if isinstance(e, ToolCall)] == [True]
