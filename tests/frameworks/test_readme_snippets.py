"""The transparent-mode guide's one-line change per framework (docs/guides/transparent-mode.md), run as
written: each snippet is executed verbatim (``URL`` the local fault provider, ``KEY`` a test key,
``streamfsm`` handing out tapped clients whose records this test collects), then one streaming turn goes
through the objects it built, and the tap must have recorded it."""

from __future__ import annotations

import re
import types
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from fwsupport import frames_for, preload

import streamfsm
from streamfsm.testing import End, FaultServer, Headers, Send, text_stream

pytestmark = pytest.mark.anyio
preload()

# the guide that was the README's transparent-mode section
GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "transparent-mode.md").read_text()
SECTION = GUIDE.split("## The one-line change, per framework", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```py\n(.*?)```", SECTION, flags=re.S)
SNIPPETS = {block.splitlines()[0]: block for block in BLOCKS if block.startswith("# ")}
(VERDICTS,) = [block for block in BLOCKS if "with_verdicts" in block]
KEY = "sk-test-0000"
BOUND_S = 20.0


def snippet(title: str) -> str:
    (found,) = [code for first, code in SNIPPETS.items() if first.startswith(f"# {title}")]
    return found


def tapped(records: list[Any]) -> types.SimpleNamespace:
    """``streamfsm`` as the snippets use it, every client's records going to ``records``."""
    config = streamfsm.StreamConfig(sinks=(records.append,))
    return types.SimpleNamespace(
        async_http_client=lambda **kw: streamfsm.async_http_client(config=config, **kw),
        http_client=lambda **kw: streamfsm.http_client(config=config, **kw),
        tap=types.SimpleNamespace(
            async_transport=lambda *a, **kw: streamfsm.tap.async_transport(*a, config=config, **kw)
        ),
    )


async def _agents(ns: dict[str, Any]) -> str:
    from agents import Runner

    result = Runner.run_streamed(ns["agent"], "hi")
    async for _ in result.stream_events():
        pass
    return str(result.final_output)


async def _pydantic_ai(ns: dict[str, Any]) -> str:
    async with ns["agent"].run_stream("hi") as result:
        return "".join([piece async for piece in result.stream_text(delta=True, debounce_by=None)])


async def _langchain(ns: dict[str, Any]) -> str:
    return "".join([str(chunk.content) async for chunk in ns["llm"].astream("hi")])


async def _litellm_openai(ns: dict[str, Any]) -> str:
    import litellm

    stream = await litellm.acompletion(
        model="openai/gpt-4.1",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        client=ns["openai_client"],
    )
    return "".join([chunk.choices[0].delta.content or "" async for chunk in stream])


async def _litellm_anthropic(ns: dict[str, Any]) -> str:
    import litellm

    stream = await litellm.acompletion(
        model="anthropic/claude-sonnet-4-5",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        api_base=ns["URL"],
        api_key=KEY,
        client=ns["anthropic_handler"],
    )
    return "".join([chunk.choices[0].delta.content or "" async for chunk in stream])


async def _genai(ns: dict[str, Any]) -> str:
    stream = await ns["client"].aio.models.generate_content_stream(model="gemini-2.5-flash", contents="hi")
    return "".join([chunk.text or "" async for chunk in stream])


CASES: dict[str, tuple[str, str, Callable[[dict[str, Any]], Awaitable[str]]]] = {
    "agents": ("OpenAI Agents SDK", "openai-chat", _agents),
    "pydantic-ai": ("pydantic-ai", "openai-chat", _pydantic_ai),
    "chat-openai": ("LangChain ChatOpenAI", "openai-chat", _langchain),
    "chat-anthropic": ("LangChain ChatAnthropic", "anthropic", _langchain),
    "litellm-openai": ("LiteLLM", "openai-chat", _litellm_openai),
    "litellm-anthropic": ("LiteLLM", "anthropic", _litellm_anthropic),
    "google-genai": ("google-genai", "gemini", _genai),
}


def test_every_framework_snippet_is_run_here() -> None:
    titles = {title for title, _, _ in CASES.values()}
    assert len(SNIPPETS) == len(titles)
    for first in SNIPPETS:
        assert any(first.startswith(f"# {title}") for title in titles), first


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_readme_snippet_taps_its_framework(case: str) -> None:
    title, fmt, turn = CASES[case]
    frames = frames_for(fmt, text_stream(fmt, ["Hello", " there"]))  # type: ignore[arg-type]
    records: list[Any] = []
    async with FaultServer((Headers(), *(Send(f) for f in frames), End())) as server:
        ns: dict[str, Any] = {"URL": server.base_url, "KEY": KEY, "streamfsm": tapped(records)}
        exec(snippet(title), ns)  # the guide's code, as written
        with anyio.fail_after(BOUND_S):
            text = await turn(ns)
    assert "Hello there" in text
    (record,) = records
    assert record["provider"] == fmt
    # LiteLLM's Anthropic path closes the response after the stop reason, before message_stop (also
    # without the tap): the consumer stopped.
    finished = "local_abort.consumer_stopped" if case == "litellm-anthropic" else "completed.finished"
    assert record["outcome"]["summary_key"] == finished


def test_the_verdict_snippet_wires_both_seams() -> None:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI
    from pydantic_ai.models.fallback import FallbackModel
    from pydantic_ai.models.test import TestModel

    client = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key=KEY)
    ns: dict[str, Any] = {
        "OpenAIChatCompletionsModel": OpenAIChatCompletionsModel,
        "client": client,
        "FallbackModel": FallbackModel,
        "primary": TestModel(),
        "backup": TestModel(),
    }
    exec(VERDICTS, ns)
    assert isinstance(ns["model"], OpenAIChatCompletionsModel)
    assert ns["model"].get_retry_advice.__qualname__.startswith("with_verdicts")
    assert isinstance(ns["fallback"], FallbackModel)
