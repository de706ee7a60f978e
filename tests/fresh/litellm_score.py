"""Play each fresh shape from the same fault server through LiteLLM, the way its users call it, and turn what
the caller got into the scorer's `Observed`, so the same predicates judge it (``python -m tests.fresh
--litellm``, run with the interpreter of a venv that has LiteLLM: see SOURCES.md).

What the caller got is read the way a LiteLLM user reads it: the streamed deltas (text), the response
``litellm.stream_chunk_builder`` rebuilds from the chunks (tool calls, finish reason, usage) for
``acompletion``, the typed events for ``aresponses``; and from an exception, its LiteLLM class and whether
LiteLLM's own retry rule (``litellm._should_retry`` on its status code) would retry it. The mapping, in words,
is in SOURCES.md ("How LiteLLM was scored"); it is written once, here.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any, Final

import anyio
import anyio.from_thread

from streamfsm import ToolCall
from streamfsm.testing import FaultServer, scenario_url
from tests.fresh.shapes import Shape
from tests.support.scorer import RUN_BOUND_S, Observed, router

__all__ = ["observe_all_litellm", "verdict_of"]

WHOLE_FINISHES: Final = frozenset({"stop", "tool_calls", "function_call"})
"""The finish reasons of a whole answer in LiteLLM's OpenAI vocabulary (it maps every provider's onto it)."""

_CLIENT_ITEMS: Final = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "computer_call",
    }
)
"""Responses output items the client executes (hosted tools, such as MCP or web search, run at OpenAI)."""

# (LiteLLM exception class name, provider error kind), most specific first: the first class in the exception's
# MRO that is listed names the kind.
_KINDS: Final = (
    ("ContextWindowExceededError", "context_overflow"),
    ("ContentPolicyViolationError", "content_filter"),
    ("BudgetExceededError", "quota_exhausted"),
    ("PaymentRequiredError", "quota_exhausted"),
    ("RateLimitError", "rate_limit"),
    ("AuthenticationError", "auth"),
    ("PermissionDeniedError", "permission"),
    ("NotFoundError", "not_found"),
    ("BadRequestError", "invalid_request"),
    ("UnprocessableEntityError", "invalid_request"),
    ("ServiceUnavailableError", "overloaded"),
    ("InternalServerError", "server_error"),
    ("BadGatewayError", "server_error"),
)


def _origin(error: BaseException) -> BaseException:
    """The provider's error a LiteLLM wrapper carries (``MidStreamFallbackError.original_exception``)."""
    inner = getattr(error, "original_exception", None)
    return inner if isinstance(inner, BaseException) else error


def _kind(error: BaseException) -> str:
    error = _origin(error)
    names = [cls.__name__ for cls in type(error).__mro__]
    for name, kind in _KINDS:
        if name in names:
            if kind == "rate_limit" and getattr(error, "rate_limit_type", None) == "budget":
                return "quota_exhausted"
            return kind
    return "unknown"


def verdict_of(error: BaseException, delivered: bool) -> str:
    """LiteLLM's own answer to "retry this?": its ``_should_retry`` on the status code (408, 409, 429, 5xx),
    and timeouts and connection errors, which it retries too. Only before anything reached the caller is that
    an automatic retry; after output the caller holds a partial answer that a retry would show twice."""
    import litellm

    status = getattr(error, "status_code", None)
    retryable = (
        litellm._should_retry(status)
        if isinstance(status, int)
        else isinstance(error, (litellm.Timeout, litellm.APIConnectionError))
    )
    if not retryable:
        return "no_retry"
    return "user_confirmed_retry" if delivered else "safe_auto_retry"


def _retry_after(error: BaseException) -> float | None:
    import litellm.utils

    error = _origin(error)
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None) or getattr(error, "litellm_response_headers", None)
    if not headers:
        return None
    wait = litellm.utils._get_retry_after_from_exception_header(headers)
    return float(wait) if isinstance(wait, (int, float)) and wait > 0 else None


_BEDROCK: Final = {
    "aws_access_key_id": "AKIAFRESHSETEXAMPLE",
    "aws_secret_access_key": "fresh-set-not-a-secret",
    "aws_region_name": "us-east-1",
}
_MODELS: Final = {
    "openai-chat": "openai/gpt-4o-mini",
    "anthropic": "anthropic/claude-haiku-4-5",
    "gemini": "gemini/gemini-2.5-flash",
    "ollama": "ollama_chat/llama3.2",
    "bedrock-converse": "bedrock/converse/anthropic.claude-haiku-4-5-20251001-v1:0",
}
_OWN_PROVIDERS: Final[dict[str, tuple[str, dict[str, Any]]]] = {
    "azure-": ("azure/gpt-4o-mini", {"api_version": "2024-10-21"}),
    "deepseek-": ("deepseek/deepseek-chat", {}),
    "moonshot-": ("moonshot/kimi-k2-0711-preview", {}),
    "openrouter-": ("openrouter/openai/gpt-4o-mini", {}),
}
"""Chat shapes of a provider LiteLLM has a provider of its own for (and its error mapping), by id prefix."""
MESSAGES: Final = [{"role": "user", "content": "hi"}]


def _call_arguments(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind == "function_call":
        return str(item.get("arguments") or "")
    if kind == "custom_tool_call":
        return str(item.get("input") or "")
    return json.dumps(item.get("action") or item.get("operation") or {})


async def _completion(shape: Shape, url: str, seen: Observed) -> None:
    import litellm

    extra: dict[str, Any] = (
        {"aws_bedrock_runtime_endpoint": url, **_BEDROCK}
        if shape.format == "bedrock-converse"
        else {"api_base": url, "api_key": "sk-fresh-set"}
    )
    model = _MODELS[shape.format]
    for prefix, (own, more) in _OWN_PROVIDERS.items():  # called as LiteLLM's users call that provider
        if shape.id.startswith(prefix):
            model, extra = own, {**extra, **more}
    chunks: list[Any] = []
    pieces: list[str] = []
    try:
        response = await litellm.acompletion(
            model=model,
            messages=MESSAGES,
            stream=True,
            num_retries=0,
            max_retries=0,
            timeout=RUN_BOUND_S,
            **extra,
        )
        async for chunk in response:
            chunks.append(chunk)
            for choice in chunk.choices or ():
                if choice.delta is not None and choice.delta.content:
                    pieces.append(choice.delta.content)
    finally:
        seen.text = "".join(pieces)
        if chunks:
            built = litellm.stream_chunk_builder(chunks, messages=MESSAGES)
            if built is not None and built.choices:
                choice = built.choices[0]
                seen.finish_unified = choice.finish_reason
                for n, call in enumerate(choice.message.tool_calls or ()):
                    function = call.function
                    seen.calls.append(
                        ToolCall(call.id or f"call_{n}", function.name or "", function.arguments or "", n)
                    )
            usage = getattr(built, "usage", None)
            seen.output_tokens = getattr(usage, "completion_tokens", None) if usage else None


async def _responses(shape: Shape, url: str, seen: Observed) -> None:
    import litellm

    pieces: list[str] = []
    try:
        stream = await litellm.aresponses(
            model="openai/gpt-5-mini",
            input="hi",
            stream=True,
            api_base=url,
            api_key="sk-fresh-set",
            num_retries=0,
            max_retries=0,
            timeout=RUN_BOUND_S,
        )
        async for event in stream:
            data = event.model_dump() if hasattr(event, "model_dump") else dict(event)
            kind = data.get("type")
            if kind == "response.output_text.delta":
                pieces.append(str(data.get("delta") or ""))
            elif (
                kind == "response.output_item.done" and (data.get("item") or {}).get("type") in _CLIENT_ITEMS
            ):
                item = data["item"]
                seen.calls.append(
                    ToolCall(
                        str(item.get("call_id") or ""),
                        str(item.get("name") or item["type"]),
                        _call_arguments(item),
                    )
                )
            elif kind in ("response.completed", "response.incomplete"):
                response = data.get("response") or {}
                status = response.get("status")
                reason = (response.get("incomplete_details") or {}).get("reason")
                if status == "completed":
                    seen.finish_unified = "tool_calls" if seen.calls else "stop"
                elif reason == "max_output_tokens":
                    seen.finish_unified = "length"
                elif reason == "content_filter":
                    seen.finish_unified = "content_filter"
                else:
                    seen.finish_unified = str(status)
                usage = response.get("usage") or {}
                seen.output_tokens = usage.get("output_tokens")
            elif kind in ("response.failed", "error"):
                seen.summary_key = f"failed.{kind}"
                seen.failure_class = "provider_error"
                seen.cause = "unknown"
                seen.verdict = "user_confirmed_retry" if pieces or seen.calls else "no_retry"
    finally:
        seen.text = "".join(pieces)


async def observe_litellm(shape: Shape, server_url: str) -> Observed:
    """What a LiteLLM user got from ``shape``, as an `Observed` the scorer judges."""
    seen = Observed(summary_key="", failure_class="completed", verdict="no_retry", cause="")
    url = scenario_url(server_url, shape.id)
    if shape.format == "openai-responses":
        play = _responses
    elif shape.format in _MODELS:
        play = _completion
    else:
        seen.error = f"not played: LiteLLM has no way to call {shape.format}"
        return seen
    try:
        with anyio.fail_after(RUN_BOUND_S + 2):
            await play(shape, url, seen)
    except TimeoutError:
        seen.error = f"the LiteLLM call did not end within {RUN_BOUND_S:g} s"
        return seen
    except Exception as error:  # what the caller got: judged, not a harness error
        delivered = bool(seen.text or seen.calls)
        seen.failure_class = "provider_error"
        seen.summary_key = f"failed.{type(error).__name__}"
        seen.cause = _kind(error)
        seen.verdict = verdict_of(error, delivered)
        seen.retry_after_s = _retry_after(error)
        return seen
    if not seen.summary_key:
        whole = seen.finish_unified in WHOLE_FINISHES
        seen.summary_key = "completed.finished" if whole else f"completed.{seen.finish_unified}"
        if seen.finish_unified is None:  # the stream ended without any finish: LiteLLM raised nothing
            seen.summary_key = "completed.no_finish"
    return seen


async def observe_all_litellm(shapes: Sequence[Shape]) -> list[tuple[Shape, Observed]]:
    """Each shape once, one at a time, against one fault server, through LiteLLM."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch from the network
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    out: list[tuple[Shape, Observed]] = []
    # The fault server runs on an event loop of its own: LiteLLM makes blocking HTTP calls on the caller's
    # loop (its success logging asks Ollama's /api/show synchronously): a server sharing it would deadlock.
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(FaultServer(router(shapes))) as server,
    ):
        for shape in shapes:
            print(f"litellm: {shape.id}", file=sys.stderr, flush=True)
            out.append((shape, await observe_litellm(shape, server.base_url)))
    return out
