"""Usage like the SDKs': the provider's total where it gives one, and Anthropic's two usages (message_start
with a placeholder output_tokens=1, then message_delta) normalised to one final usage. Over real sockets,
through open_stream and wrap() of the real SDKs."""

from __future__ import annotations

import anyio
import pytest

import streamfsm
from streamfsm import Usage
from streamfsm.testing import End, FaultServer, Fin, Headers, Send, text_stream
from streamfsm.testing._wire import NDJSON_FORMATS
from tests.support.runs import BODIES, SSE_FORMATS, script
from tests.support.sdk import create, serving

pytestmark = pytest.mark.anyio
BOUND_S = 20.0


async def _usages(fmt: str, steps: tuple[object, ...]) -> tuple[list[Usage], streamfsm.Run]:
    async with FaultServer(steps) as server:
        with anyio.fail_after(BOUND_S):
            try:
                async with streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt]) as run:
                    return [e async for e in run.collect() if isinstance(e, Usage)], run
            except streamfsm.StreamFailed:
                return [], run


@pytest.mark.parametrize("fmt", [*SSE_FORMATS, *NDJSON_FORMATS])
async def test_the_total_is_the_providers_where_it_gives_one(fmt: str) -> None:
    usages, run = await _usages(fmt, (Headers(), *(Send(f) for f in text_stream(fmt, ["Hel", "lo"])), End()))  # type: ignore[arg-type]
    final = run.result().usage
    assert final is not None and usages[-1].input_tokens == final.input_tokens
    assert final.input_tokens and final.output_tokens
    if fmt in ("anthropic", "ollama"):
        assert final.total_tokens is None  # Anthropic and Ollama give no total; none is made up
    else:
        assert final.total_tokens == final.input_tokens + final.output_tokens == usages[-1].total_tokens


async def test_anthropic_usage_arriving_twice_is_one_final_usage() -> None:
    frames = text_stream("anthropic", ["Hel", "lo"])
    usages, run = await _usages("anthropic", (Headers(), *(Send(f) for f in frames), End()))
    first, last = usages[0], usages[-1]
    assert first.input_tokens and first.output_tokens is None  # never the placeholder 1
    assert last.input_tokens == first.input_tokens and last.output_tokens and last.output_tokens > 1
    assert run.result().usage == last
    assert run.record is not None and run.record["tokens"]["output"] == last.output_tokens


async def test_an_anthropic_stream_cut_before_message_delta_never_reports_the_placeholder() -> None:
    frames = text_stream("anthropic", ["Hel", "lo"])
    before_delta = frames[: next(i for i, f in enumerate(frames) if b"message_delta" in f)]
    steps = (Headers(), *(Send(f) for f in before_delta), Fin())
    async with FaultServer(steps) as server:
        with pytest.raises(streamfsm.StreamFailed) as info:
            async with streamfsm.open_stream(
                "anthropic", base_url=server.base_url, json=BODIES["anthropic"]
            ) as run:
                async for _ in run.collect():
                    pass
    assert info.value.record["tokens"]["output"] is None
    usage = run.result().usage
    assert usage is not None and usage.input_tokens and usage.output_tokens is None


async def test_the_anthropic_sdk_stream_gives_the_same_final_usage() -> None:
    frames = text_stream("anthropic", ["Hel", "lo"])
    async with serving("anthropic", script(frames, End())) as (_, client):
        with anyio.fail_after(BOUND_S):
            async with streamfsm.wrap(create("anthropic", client)) as run:
                usages = [e async for e in run.collect() if isinstance(e, Usage)]
    assert usages[0].output_tokens is None and usages[-1].output_tokens and usages[-1].output_tokens > 1
    assert run.result().usage == usages[-1]
