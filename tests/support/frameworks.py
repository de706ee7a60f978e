"""The real agent frameworks, each driven once through its own public API against a `FaultServer`, with or
without the tap: one adapter per framework, the scenario scripts, and what a run left behind.

An adapter builds the framework's client around the HTTP client it is handed (the tap's, or a plain client of
the same HTTP library: the baseline), runs one user turn, and returns an `Outcome`: what the framework showed
its caller (text, tool calls, the tool's own runs, the exception and its chain), in plain values that compare
equal across the two runs. The framework-specific facts (which client seam, which retry knob, which HTTP
library) live here and nowhere else; the tests in ``test_frameworks.py`` are the same for every framework.
"""

from __future__ import annotations

import importlib
import json
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from streamfsm.testing import FaultServer, frame

Fmt = Literal["openai-chat", "openai-responses", "anthropic", "gemini"]

MODELS: dict[str, str] = {
    "openai-chat": "gpt-4o-mini",
    "openai-responses": "gpt-4o-mini",
    "anthropic": "claude-test-model",  # a name no SDK version knows, so none warns that it is deprecated
    "gemini": "gemini-2.5-flash",
}
SDK_TIMEOUT_S = 10.0  # the SDKs' own timeout in every run but the read-timeout baseline
READ_TIMEOUT_S = 0.5  # the baseline's read timeout, and the tap's idle watchdog
BOUND_S = 20.0  # every run is bounded well inside the SDK's own timeout
PROMPT = "What is the weather in Paris?"
TOOL_NAME = "get_weather"


# -- what a run showed ---------------------------------------------------------------------------------------


def qualname(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"


def chain_of(exc: BaseException | None) -> list[BaseException]:
    """``exc`` and its causes and contexts, outermost first (each once)."""
    out: list[BaseException] = []
    while exc is not None and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


@dataclass
class Outcome:
    """What the framework showed its caller, in values that compare equal between two runs."""

    text: str = ""  # the text the caller was shown as it streamed
    final: str | None = None  # the framework's final answer, when the turn finished
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)  # (name, parsed arguments)
    tools_ran: list[dict[str, Any]] = field(default_factory=list)  # the tool's own calls, in order
    error: str | None = None  # qualified type of what the framework raised
    error_chain: list[str] = field(default_factory=list)  # qualified types, outermost first
    requests: int = 0  # requests the fault server saw (the SDK's and the framework's own retries)
    paths: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    def visible(self) -> dict[str, Any]:
        """Everything a framework user could observe, less timing."""
        return {
            "text": self.text,
            "final": self.final,
            "tool_calls": self.tool_calls,
            "tools_ran": self.tools_ran,
            "error": self.error,
            "error_chain": self.error_chain,
            "requests": self.requests,
            "paths": self.paths,
        }


# -- scripts -------------------------------------------------------------------------------------------------


def _fix_responses(frames: list[bytes]) -> list[bytes]:
    """Responses frames as OpenAI sends them: a finished message item carries its content, and
    ``response.completed`` lists the finished items. ``streamfsm.testing`` leaves both out (enough for the
    SDKs alone, not for the Agents SDK, which builds its turn from them: a message without content is a
    ``TypeError`` inside the runner)."""
    texts: dict[str, str] = {}
    done: list[dict[str, Any]] = []
    out: list[bytes] = []
    for raw in frames:
        event, data = None, None
        for line in raw.decode().splitlines():
            if line.startswith("event: "):
                event = line[len("event: ") :]
            elif line.startswith("data: "):
                data = json.loads(line[len("data: ") :])
        assert isinstance(data, dict), raw
        kind = data.get("type")
        if kind == "response.output_text.delta":
            texts[data["item_id"]] = texts.get(data["item_id"], "") + data["delta"]
        elif kind == "response.output_item.done":
            item = dict(data["item"])
            if item.get("type") == "message":
                text = texts.get(item["id"], "")
                item["content"] = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
            data = {**data, "item": item}
            done.append(item)
        elif kind in ("response.completed", "response.incomplete"):
            data = {**data, "response": {**data["response"], "output": done}}
        out.append(frame(data, event))
    return out


def frames_for(fmt: Fmt, frames: list[bytes]) -> list[bytes]:
    return _fix_responses(frames) if fmt == "openai-responses" else frames


# -- the adapters --------------------------------------------------------------------------------------------

RunTurn = Callable[..., Awaitable[None]]


@dataclass(frozen=True)
class Framework:
    """One framework on one wire format.

    ``run(base_url, http_client, out, *, max_retries, timeout)`` runs one user turn and fills ``out``
    (``Outcome``); it raises what the framework raised. ``http`` is the HTTP library of the client the
    framework's seam takes. ``agent``: the framework runs the tool and asks the model again (two requests).
    """

    name: str
    fmt: Fmt
    http: Literal["httpx", "httpx2"]
    agent: bool
    run: RunTurn
    # The framework closes the response once the stop reason arrived, before the format's terminal event
    # (LiteLLM's anthropic/ handler stops after message_delta, without reading message_stop): a finished turn
    # is then, by the tap's rule, a local_abort (consumer_stopped).
    closes_after_stop_reason: bool = False
    # Its retries resend the request with the SDK's retry-count header (x-stainless-retry-count: the openai
    # and anthropic SDKs), which is what the tap chains attempts by. google-genai's (tenacity) and LiteLLM's
    # own retries (num_retries) send none.
    retry_header: bool = True

    def __str__(self) -> str:
        return self.name


def weather(out: Outcome) -> Callable[[str], str]:
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        out.tools_ran.append({"city": city})
        return f"sunny in {city}"

    return get_weather


def _timeout(http: str, timeout: float | None) -> Any:
    """The SDK timeout for a run: SDK_TIMEOUT_S overall, ``timeout`` for reads when given."""
    if http == "httpx":
        import httpx

        return httpx.Timeout(SDK_TIMEOUT_S, read=timeout or SDK_TIMEOUT_S)
    import httpx2

    return httpx2.Timeout(SDK_TIMEOUT_S, read=timeout or SDK_TIMEOUT_S)


def _openai_client(base_url: str, http_client: Any, max_retries: int, timeout: float | None) -> Any:
    import openai

    return openai.AsyncOpenAI(
        base_url=base_url + "/v1",
        api_key="sk-test-0000",
        max_retries=max_retries,
        timeout=_timeout("httpx2", timeout),
        http_client=http_client,
    )


def _anthropic_client(base_url: str, http_client: Any, max_retries: int, timeout: float | None) -> Any:
    import anthropic

    return anthropic.AsyncAnthropic(
        base_url=base_url,
        api_key="sk-ant-test-0000",
        max_retries=max_retries,
        timeout=_timeout("httpx2", timeout),
        http_client=http_client,
    )


# OpenAI Agents SDK: AsyncOpenAI(http_client=...) -> OpenAIChatCompletionsModel / OpenAIResponsesModel.


async def _agents(
    fmt: Fmt, base_url: str, http_client: Any, out: Outcome, *, max_retries: int, timeout: float | None
) -> None:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)  # the default exporter would post traces to OpenAI
    client = _openai_client(base_url, http_client, max_retries, timeout)
    model_cls: Any = OpenAIChatCompletionsModel if fmt == "openai-chat" else OpenAIResponsesModel
    model = model_cls(model=MODELS[fmt], openai_client=client)
    agent = Agent(name="weather", instructions="Be brief.", model=model, tools=[function_tool(weather(out))])
    try:
        result = Runner.run_streamed(agent, PROMPT)
        async for event in result.stream_events():
            if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
                out.text += event.data.delta
            if event.type == "run_item_stream_event" and event.name == "tool_called":
                raw = event.item.raw_item
                name = raw["name"] if isinstance(raw, dict) else raw.name
                arguments = raw["arguments"] if isinstance(raw, dict) else raw.arguments
                out.tool_calls.append((name, json.loads(arguments)))
        out.final = str(result.final_output)
    finally:
        await client.close()


# pydantic-ai: OpenAIProvider(openai_client=...) / AnthropicProvider(anthropic_client=...).


async def _pydantic_ai(
    fmt: Fmt, base_url: str, http_client: Any, out: Outcome, *, max_retries: int, timeout: float | None
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    if fmt == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        client = _anthropic_client(base_url, http_client, max_retries, timeout)
        model: Any = AnthropicModel(MODELS[fmt], provider=AnthropicProvider(anthropic_client=client))
    else:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        client = _openai_client(base_url, http_client, max_retries, timeout)
        model = OpenAIChatModel(MODELS[fmt], provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, instructions="Be brief.", tools=[weather(out)])
    try:
        async with agent.run_stream(PROMPT) as result:
            async for piece in result.stream_text(delta=True, debounce_by=None):
                out.text += piece
            out.final = str(await result.get_output())
        for message in result.all_messages():
            if isinstance(message, ModelResponse):
                for part in message.parts:
                    if isinstance(part, ToolCallPart):
                        out.tool_calls.append((part.tool_name, part.args_as_dict()))
    finally:
        await client.close()


# LangChain: ChatOpenAI(http_async_client=...); ChatAnthropic takes no client: its cached `_async_client`.


async def _langchain(
    fmt: Fmt, base_url: str, http_client: Any, out: Outcome, *, max_retries: int, timeout: float | None
) -> None:
    from langchain_core.messages import AIMessageChunk
    from langchain_core.tools import tool

    get_weather = tool(weather(out))
    if fmt == "anthropic":
        from langchain_anthropic import ChatAnthropic

        llm: Any = ChatAnthropic(
            model=MODELS[fmt],
            base_url=base_url,
            api_key="sk-ant-test-0000",
            max_retries=max_retries,
            default_request_timeout=SDK_TIMEOUT_S,
        )
        # No client parameter: ChatAnthropic builds `anthropic.AsyncAnthropic` in a cached property, from a
        # process-wide lru_cached httpx2 client. Filling that cache slot first is the only seam.
        client = _anthropic_client(base_url, http_client, max_retries, timeout)
        llm.__dict__["_async_client"] = client
    else:
        from langchain_openai import ChatOpenAI

        llm = ChatOpenAI(
            model=MODELS[fmt],
            base_url=base_url + "/v1",
            api_key="sk-test-0000",
            max_retries=max_retries,
            timeout=_timeout("httpx2", timeout),
            http_async_client=http_client,
            stream_chunk_timeout=None,  # LangChain's own chunk watchdog (120 s by default), off here
        )
        client = None
    bound = llm.bind_tools([get_weather])
    merged: Any = None
    try:
        async for chunk in bound.astream(PROMPT):
            assert isinstance(chunk, AIMessageChunk)
            out.text += chunk.text if isinstance(chunk.text, str) else chunk.text()
            merged = chunk if merged is None else merged + chunk
    finally:
        if client is not None:
            await client.close()
    if merged is not None:
        out.final = merged.text if isinstance(merged.text, str) else merged.text()
        out.tool_calls = [(call["name"], call["args"]) for call in merged.tool_calls]
        for call in merged.tool_calls:  # a chat model does not run tools: the caller does, as an agent would
            get_weather.invoke(call["args"])


# LiteLLM: acompletion(client=AsyncOpenAI(http_client=...)) for openai/; for anthropic/ its own
# AsyncHTTPHandler, whose `client` setter takes an httpx.AsyncClient.


async def _litellm(
    fmt: Fmt, base_url: str, http_client: Any, out: Outcome, *, max_retries: int, timeout: float | None
) -> None:
    import litellm

    tools = [
        {
            "type": "function",
            "function": {
                "name": TOOL_NAME,
                "description": "Get the current weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    kwargs: dict[str, Any] = {}
    if fmt == "anthropic":
        from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

        handler = AsyncHTTPHandler(timeout=_timeout("httpx", timeout))
        if http_client is not None:
            handler.client = http_client
        kwargs = {"client": handler, "api_base": base_url, "api_key": "sk-ant-test-0000"}
        model = f"anthropic/{MODELS[fmt]}"
        closer: Any = handler.close
    else:
        client = _openai_client(base_url, http_client, 0, timeout)  # LiteLLM retries by itself
        kwargs = {"client": client}
        model = f"openai/{MODELS[fmt]}"
        closer = client.close
    try:
        # LiteLLM sends its own timeout with every request (600 s unless given), over the SDK client's; and it
        # retries by itself (num_retries), with the SDK's retries off.
        stream = await litellm.acompletion(
            model=model,
            messages=[{"role": "user", "content": PROMPT}],
            tools=tools,
            stream=True,
            timeout=_timeout("httpx", timeout),
            num_retries=max_retries,
            **kwargs,
        )
        calls: dict[int, dict[str, str]] = {}
        async for chunk in stream:
            delta = chunk.choices[0].delta if chunk.choices else None
            if delta is None:
                continue
            if delta.content:
                out.text += delta.content
            for call in delta.tool_calls or ():
                slot = calls.setdefault(call.index, {"name": "", "arguments": ""})
                if call.function.name:
                    slot["name"] = call.function.name
                slot["arguments"] += call.function.arguments or ""
        out.final = out.text
        out.tool_calls = [(c["name"], json.loads(c["arguments"] or "{}")) for c in calls.values()]
        for _, arguments in out.tool_calls:
            weather(out)(**arguments)
    finally:
        await closer()


# google-genai: HttpOptions(httpx_async_client=...) (an httpx2 client; with aiohttp installed, the default
# async client is aiohttp's, so the baseline passes a plain httpx2 client too).


async def _genai(
    fmt: Fmt, base_url: str, http_client: Any, out: Outcome, *, max_retries: int, timeout: float | None
) -> None:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(
        base_url=base_url,
        api_version="v1beta",
        timeout=int((timeout or SDK_TIMEOUT_S) * 1000),
        retry_options=types.HttpRetryOptions(
            attempts=max_retries + 1, initial_delay=0.05, max_delay=0.2, jitter=0.0
        ),
        httpx_async_client=http_client,
    )
    client = genai.Client(api_key="test-key-0000", http_options=options)
    config = types.GenerateContentConfig(
        tools=[weather(out)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    try:
        stream = await client.aio.models.generate_content_stream(
            model=MODELS[fmt], contents=PROMPT, config=config
        )
        async for chunk in stream:
            for candidate in chunk.candidates or ():
                for part in (candidate.content.parts if candidate.content else None) or ():
                    if part.text and not part.thought:
                        out.text += part.text
                    if part.function_call:
                        out.tool_calls.append((part.function_call.name, dict(part.function_call.args or {})))
        out.final = out.text
        for _, arguments in out.tool_calls:
            weather(out)(**arguments)
    finally:
        await client.aio.aclose()


def _bind(fn: Callable[..., Awaitable[None]], fmt: Fmt) -> RunTurn:
    async def run(base_url: str, http_client: Any, out: Outcome, **kwargs: Any) -> None:
        await fn(fmt, base_url, http_client, out, **kwargs)

    return run


FRAMEWORKS: tuple[Framework, ...] = (
    Framework("agents-chat", "openai-chat", "httpx2", True, _bind(_agents, "openai-chat")),
    Framework("agents-responses", "openai-responses", "httpx2", True, _bind(_agents, "openai-responses")),
    Framework("pydantic-ai-openai", "openai-chat", "httpx2", True, _bind(_pydantic_ai, "openai-chat")),
    Framework("pydantic-ai-anthropic", "anthropic", "httpx2", True, _bind(_pydantic_ai, "anthropic")),
    Framework("langchain-openai", "openai-chat", "httpx2", False, _bind(_langchain, "openai-chat")),
    Framework("langchain-anthropic", "anthropic", "httpx2", False, _bind(_langchain, "anthropic")),
    Framework(
        "litellm-openai", "openai-chat", "httpx2", False, _bind(_litellm, "openai-chat"), retry_header=False
    ),
    Framework(
        "litellm-anthropic",
        "anthropic",
        "httpx",
        False,
        _bind(_litellm, "anthropic"),
        closes_after_stop_reason=True,
        retry_header=False,
    ),
    Framework("google-genai", "gemini", "httpx2", False, _bind(_genai, "gemini"), retry_header=False),
)


# -- one run -------------------------------------------------------------------------------------------------


def preload() -> None:
    """Import every framework up front, so that no run's timing holds an import (LiteLLM's takes seconds)."""
    for name in (
        "agents",
        "google.genai",
        "langchain_anthropic",
        "langchain_openai",
        "litellm",
        "pydantic_ai.models.anthropic",
        "pydantic_ai.models.openai",
    ):
        with warnings.catch_warnings():  # pydantic's notes on the frameworks' own types, at import
            warnings.simplefilter("ignore", UserWarning)
            importlib.import_module(name)


def plain_client(http: str) -> Any:
    if http == "httpx":
        import httpx

        return httpx.AsyncClient()
    import httpx2

    return httpx2.AsyncClient()


async def play(
    framework: Framework,
    router: Any,
    http_client: Any,
    *,
    max_retries: int = 1,
    timeout: float | None = None,
) -> Outcome:
    """One user turn of ``framework`` against a fresh fault server playing ``router``."""
    out = Outcome()
    async with FaultServer(router) as server:
        started = time.monotonic()
        try:
            with anyio.fail_after(BOUND_S):
                await framework.run(
                    server.base_url, http_client, out, max_retries=max_retries, timeout=timeout
                )
        except Exception as exc:
            out.exception = exc
            out.error = qualname(exc)
            out.error_chain = [qualname(e) for e in chain_of(exc)]
        finally:
            out.elapsed_s = time.monotonic() - started
            if http_client is not None:
                await http_client.aclose()
        out.requests = server.requests_seen
        out.paths = [r.path for r in server.requests]
    return out


# -- the five scenarios --------------------------------------------------------------------------------------

WATCHDOG_S = 0.3  # the tap's idle watchdog, and the SDK read timeout in the keepalive scenario's runs
KEEPALIVE_EVERY_S = 0.05
KEEPALIVE_COUNT = 16  # 0.8 s of keepalives: long past WATCHDOG_S, then the peer closes
RETRY_AFTER_S = 0.1
ARGUMENTS = {"city": "Paris"}


@dataclass(frozen=True)
class Expect:
    """The record the tap must leave for one stream."""

    summary_key: str
    verdict: str


def sequence(*scripts: tuple[Any, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A router playing ``scripts[n]`` for the n-th request (the last one for any later request)."""

    def route(request: Any) -> tuple[Any, ...]:
        return scripts[min(request.seq, len(scripts) - 1)]

    return route


def _body(fmt: Fmt, frames: list[bytes], *tail: Any) -> tuple[Any, ...]:
    from streamfsm.testing import Headers, Send

    return (Headers(), *(Send(f) for f in frames_for(fmt, frames)), *tail)


def normal(fw: Framework) -> tuple[Any, list[Expect]]:
    """A tool call, then (for an agent, which runs the tool and asks again) a text answer."""
    from streamfsm.testing import End, text_stream, tool_call_stream

    done = Expect("completed.finished", "no_retry")
    if fw.closes_after_stop_reason:
        done = Expect("local_abort.consumer_stopped", "no_retry")
    call = _body(fw.fmt, tool_call_stream(fw.fmt, [(TOOL_NAME, json.dumps(ARGUMENTS))]), End())
    if not fw.agent:
        return sequence(call), [done]
    answer = _body(fw.fmt, text_stream(fw.fmt, ["It is ", "sunny."]), End())
    return sequence(call, answer), [done, done]


def _catalog(name: str) -> tuple[tuple[Any, ...], Expect]:
    from streamfsm.testing import find

    scenario = find(name)
    assert scenario.expected_class is not None and scenario.expected_verdict is not None
    expect = Expect(
        f"{scenario.expected_class.value}.{scenario.expected_cause}", scenario.expected_verdict.value
    )
    return scenario.script, expect


def cut_mid_answer(fw: Framework) -> tuple[Any, list[Expect]]:
    """The catalog's text-then-fin: some visible text, then the peer closes mid-body."""
    script, expect = _catalog(f"{fw.fmt}/text-then-fin")
    return sequence(script), [expect]


def cut_in_tool_arguments(fw: Framework) -> tuple[Any, list[Expect]]:
    """The catalog's tool-args-cut (Gemini, which sends whole calls: the cut inside the call's chunk)."""
    name = "tool-call-chunk-cut" if fw.fmt == "gemini" else "tool-args-cut"
    script, expect = _catalog(f"{fw.fmt}/{name}")
    return sequence(script), [expect]


def keepalive_stall(fw: Framework, *, silent: bool = False) -> tuple[Any, list[Expect]]:
    """The catalog's text-then-keepalive-stall, bounded: text, 0.8 s of keepalives, then FIN. ``silent``:
    the same stall without keepalives (what the SDK's own read timeout catches)."""
    from streamfsm.testing import Fin, Keepalive, Stall, keepalive

    script, expect = _catalog(f"{fw.fmt}/text-then-keepalive-stall")
    prefix = tuple(step for step in script if type(step).__name__ not in ("Keepalive", "End"))
    if silent:
        return sequence((*prefix, Stall())), [expect]
    # google-genai parses any line that is not "data: ..." as JSON: an SSE comment fails the stream
    # (UnknownApiResponseError), with or without the tap. Bare line ends keep its connection warm instead.
    beat = b"\r\n" if fw.fmt == "gemini" else keepalive(fw.fmt)
    stall = Keepalive(KEEPALIVE_EVERY_S, KEEPALIVE_COUNT, beat)
    return sequence((*prefix, stall, Fin())), [expect]


_RATE_LIMIT_BODIES: dict[str, dict[str, Any]] = {
    "openai": {
        "error": {
            "message": "Rate limit reached for requests",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    },
    "anthropic": {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your limit"},
    },
    "gemini": {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{RETRY_AFTER_S}s"}
            ],
        }
    },
}


def rate_limited(fw: Framework) -> tuple[Any, list[Expect]]:
    """HTTP 429 to every request, with the provider's retry delay (``retry-after``; Gemini: RetryInfo)."""
    from streamfsm.testing import Status

    family = "openai" if fw.fmt.startswith("openai") else fw.fmt
    headers: tuple[tuple[str, str], ...] = (("content-type", "application/json"),)
    if family != "gemini":
        headers += (("retry-after", str(RETRY_AFTER_S)),)
    body = json.dumps(_RATE_LIMIT_BODIES[family]).encode()
    return sequence((Status(429, headers, body),)), [Expect("provider_error.rate_limit", "safe_auto_retry")]


def gzipped(fw: Framework) -> tuple[Any, list[Expect]]:
    """``normal``, with every body gzip-encoded and flushed frame by frame (as a compressing gateway sends
    it): the tap sees the transport's encoded bytes, the SDK the decoded ones."""
    import zlib

    from streamfsm.testing import Headers, Send

    router, expected = normal(fw)

    def encode(script: tuple[Any, ...]) -> tuple[Any, ...]:
        packer = zlib.compressobj(wbits=31)
        out: list[Any] = []
        for step in script:
            if isinstance(step, Headers):
                step = Headers(step.code, (*step.headers, ("content-encoding", "gzip")))
            elif isinstance(step, Send):
                step = Send(packer.compress(step.data) + packer.flush(zlib.Z_SYNC_FLUSH))
            elif type(step).__name__ == "End":
                out.append(Send(packer.flush()))
            out.append(step)
        return tuple(out)

    def route(request: Any) -> tuple[Any, ...]:
        return encode(router(request))

    return route, expected
