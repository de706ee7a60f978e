"""Issue 29, root 4, on ``wrap()``'s item path: the SDK translators read the same content shapes as the wire
adapters, report what they cannot read, and recognise vLLM's in-band error, which openai yields as a chunk."""

from __future__ import annotations

from typing import Any

import pytest

import streamfsm
from streamfsm import StreamFailed
from streamfsm.runtime import TextDelta
from streamfsm.testing import Headers, find
from tests.support.runs import validate_record
from tests.support.sdk import create, serving

pytestmark = pytest.mark.anyio

# Served as application/octet-stream, the SDK decodes the body but the run does not read it itself: each
# item the SDK yields goes through its translator.
ITEM_PATH = Headers(headers=(("content-type", "application/octet-stream"),))


def on_item_path(name: str) -> tuple[Any, ...]:
    steps = find(name).script
    assert isinstance(steps[0], Headers)
    return (ITEM_PATH, *steps[1:])


async def wrapped(fmt: str, name: str) -> tuple[streamfsm.Run, list[Any]]:
    events: list[Any] = []
    async with serving(fmt, on_item_path(name)) as (_, client):
        run = streamfsm.wrap(create(fmt, client))
        try:
            async with run:
                assert not run._reads_body  # type: ignore[attr-defined]
                events = [e async for e in run]
        except StreamFailed:
            pass
    assert run.record is not None
    validate_record(run.record)
    return run, events


async def test_chat_typed_parts_through_the_sdk_are_read() -> None:
    run, events = await wrapped("openai-chat", "openai-chat/content-as-typed-parts")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello world, again"
    assert run.record is not None
    assert run.record["outcome"]["summary_key"] == "completed.finished"


@pytest.mark.parametrize(
    ("fmt", "name"),
    [("openai-chat", "openai-chat/content-parts-unread"), ("anthropic", "anthropic/content-block-unread")],
)
async def test_unread_content_through_the_sdk_is_not_a_whole_answer(fmt: str, name: str) -> None:
    run, _ = await wrapped(fmt, name)
    assert run.record is not None
    outcome = run.record["outcome"]
    assert (outcome["summary_key"], outcome["confidence"]) == ("completed.unread_content", "low")
    assert "wire=unread_content" in outcome["evidence"]


async def test_vllms_error_chunk_through_the_sdk_is_a_provider_error() -> None:
    # openai raises only for an "error" key: vLLM's {"object": "error", ...} reaches the translator.
    run, _ = await wrapped("openai-chat", "openai-chat/vllm-object-error-after-output")
    assert run.record is not None
    assert run.record["outcome"]["summary_key"] == "provider_error.server_error"
