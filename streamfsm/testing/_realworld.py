"""Real-world wire shapes as catalog scenarios: the held-out sets of issue 29 (``tests/heldout``) and of
issue 33 (``tests/fresh``), each taken after its after-score. Each row is one response a provider, gateway
or local server was seen to send, with its public source in a comment (the full citation is in the set's
``SOURCES.md`` under the shape's id), the catalog family it joins, and the outcome the taxonomy gives it,
written out (for the fresh set, as the run gives it, which the set's predicates call the truth).

Model output text is shortened or made up where the source's text is irrelevant to the shape. Shapes that
repeat a scenario already in the catalog (same wire, same outcome) are left out here.
"""

# The wire text of Chinese providers is kept as sent (full-width punctuation included).
# Wire strings of the fresh set are kept whole, one per line.
# ruff: noqa: RUF001, E501

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from ..classify import Action, FailureClass, Phase, Verdict
from ..machine import Trigger
from ..wire import exception_message
from ._eventstream import CONTENT_TYPE as EVENT_STREAM
from ._eventstream import converse_event
from ._script import End, Headers, Send, Status, Step
from ._wire import line

__all__ = ["FAMILIES", "Outcome", "rows"]

_C, _V, _A, _P, _T = FailureClass, Verdict, Action, Phase, Trigger

Outcome = tuple[FailureClass, Verdict, Trigger | None, Phase, str, Action, float | None]
"""class, verdict, edge, phase, cause, action, retry-after: the arguments of the catalog's expectation."""

FAMILIES: Final = ("finish", "tool", "error", "content", "stream")
"""Where each row joins the catalog: unknown finishes, tool streams, limits and error words, content shapes,
and ordinary streams that must stay right."""

_ROWS: list[tuple[str, str, str, str, tuple[Step, ...], Outcome]] = []


def _row(
    family: str, fmt: str, slug: str, description: str, script: tuple[Step, ...], outcome: Outcome
) -> None:
    if family not in FAMILIES:
        raise ValueError(f"{slug}: unknown family {family!r}")
    _ROWS.append((family, fmt, slug, description, script, outcome))


def rows(fmt: str, family: str) -> list[tuple[str, str, tuple[Step, ...], Outcome]]:
    """(slug, description, script, outcome) of the real-world shapes of ``fmt`` in ``family``."""
    return [
        (slug, text, script, outcome)
        for fam, f, slug, text, script, outcome in _ROWS
        if (fam, f) == (family, fmt)
    ]


# -- wire builders ----------------------------------------------------------------------------------------


def _json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def sse(obj: Any, event: str | None = None, *, crlf: bool = False, space: bool = True) -> bytes:
    """One SSE event carrying ``obj`` as JSON (or a str as is)."""
    nl = "\r\n" if crlf else "\n"
    data = obj if isinstance(obj, str) else _json(obj)
    head = f"event: {event}{nl}" if event else ""
    return f"{head}data:{' ' if space else ''}{data}{nl}{nl}".encode()


DONE: Final = b"data: [DONE]\n\n"

JSON_CT: Final = (("content-type", "application/json"),)


def stream(*frames: bytes, tail: Step | None = None) -> tuple[Step, ...]:
    """A 200 event stream sending each frame as one chunk, ended cleanly (or by ``tail``)."""
    return (Headers(), *(Send(f) for f in frames), tail if tail is not None else End())


def http_error(status: int, body: Any, headers: tuple[tuple[str, str], ...] = ()) -> tuple[Step, ...]:
    payload = body if isinstance(body, bytes) else _json(body).encode()
    return (Status(status, (*JSON_CT, *headers), payload),)


def chat(
    delta: dict[str, Any] | None,
    finish: str | None = None,
    *,
    cid: str = "chatcmpl-held0ut",
    model: str = "served-model",
    choice_extra: dict[str, Any] | None = None,
    **top: Any,
) -> bytes:
    """A chat.completion.chunk with one choice (``delta=None``: no choices at all)."""
    body: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 1761566772,
        "model": model,
    }
    if delta is None:
        body["choices"] = []
    else:
        choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        choice.update(choice_extra or {})
        body["choices"] = [choice]
    body.update(top)
    return sse(body)


def chat_text(*pieces: str, **kw: Any) -> list[bytes]:
    return [chat({"role": "assistant", "content": ""}, **kw), *(chat({"content": p}, **kw) for p in pieces)]


def a_start(model: str = "claude-sonnet-4-5-20250929") -> bytes:
    message: dict[str, Any] = {
        "id": "msg_01HeLd0uTxx",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    }
    return sse({"type": "message_start", "message": message}, "message_start")


def a_block(index: int, block: dict[str, Any]) -> bytes:
    return sse({"type": "content_block_start", "index": index, "content_block": block}, "content_block_start")


def a_delta(index: int, delta: dict[str, Any]) -> bytes:
    return sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")


def a_text(index: int, text: str) -> bytes:
    return a_delta(index, {"type": "text_delta", "text": text})


def a_json(index: int, partial: str) -> bytes:
    return a_delta(index, {"type": "input_json_delta", "partial_json": partial})


def a_stop_block(index: int) -> bytes:
    return sse({"type": "content_block_stop", "index": index}, "content_block_stop")


def a_end(stop_reason: str, output_tokens: int = 40, stop_sequence: str | None = None) -> list[bytes]:
    delta = {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence}}
    delta["usage"] = {"output_tokens": output_tokens}
    return [sse(delta, "message_delta"), sse({"type": "message_stop"}, "message_stop")]


A_PING: Final = sse({"type": "ping"}, "ping")


class Responses:
    """Typed Responses events with increasing sequence numbers."""

    def __init__(self, rid: str = "resp_held0ut", model: str = "gpt-5-mini") -> None:
        self.seq = 0
        self.rid = rid
        self.model = model

    def ev(self, kind: str, **fields: Any) -> bytes:
        body = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return sse(body, kind)

    def response(self, status: str, **extra: Any) -> dict[str, Any]:
        return {
            "id": self.rid,
            "object": "response",
            "status": status,
            "model": self.model,
            "output": [],
            **extra,
        }

    def opening(self) -> list[bytes]:
        return [
            self.ev("response.created", response=self.response("in_progress")),
            self.ev("response.in_progress", response=self.response("in_progress")),
        ]


def g_chunk(parts: list[dict[str, Any]] | None, finish: str | None = None, **top: Any) -> bytes:
    candidate: dict[str, Any] = {"index": 0}
    if parts is not None:
        candidate["content"] = {"parts": parts, "role": "model"}
    if finish is not None:
        candidate["finishReason"] = finish
    body = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash", "responseId": "heLd0uT", **top}
    return sse(body, crlf=True)


G_USAGE: Final = {"promptTokenCount": 12, "candidatesTokenCount": 30, "totalTokenCount": 42}


# langgenius/dify#7559
_row(
    "finish",
    "openai-chat",
    "finish-sensitive",
    "Zhipu GLM stops on sensitive content with finish_reason 'sensitive': a filter stop, not a whole answer",
    stream(
        *chat_text("关于这个问题，", "我们可以从以下几个方面", model="glm-4-plus"),
        chat({"content": ""}, "sensitive", model="glm-4-plus"),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "content_filter", _A.NONE, None),
)

# DeepSeek API docs, Create Chat Completion
_row(
    "finish",
    "openai-chat",
    "finish-insufficient-system-resource",
    "DeepSeek's documented finish_reason 'insufficient_system_resource': interrupted, not a whole answer",
    stream(
        *chat_text("The proof proceeds", " by induction on n.", model="deepseek-chat"),
        chat({"content": ""}, "insufficient_system_resource", model="deepseek-chat"),
        DONE,
    ),
    (
        _C.PROVIDER_ERROR,
        _V.USER_CONFIRMED_RETRY,
        _T.PROVIDER_ERROR_EVENT,
        _P.MID_GENERATION,
        "overloaded",
        _A.CONTINUE_WITH_PARTIAL,
        None,
    ),
)

# huggingface/text-generation-inference PR #2344 (fixes #2296)
_row(
    "finish",
    "openai-chat",
    "finish-eos-token",
    "TGI's chat endpoint sent finish_reason 'eos_token' for a natural end: a whole answer (known-good set)",
    stream(
        *chat_text("Hugging Face is a company", " that builds tools for machine learning.", model="tgi"),
        chat({"role": "assistant", "content": ""}, "eos_token", model="tgi"),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# enricoros/big-AGI#1010; Anthropic docs "Handling stop reasons"
_row(
    "finish",
    "anthropic",
    "server-tool-then-pause-turn",
    "stop_reason 'pause_turn': a server-tool loop paused mid-turn, the caller must send it back to continue",
    stream(
        a_start("claude-sonnet-4-6"),
        a_block(0, {"type": "text", "text": ""}),
        a_text(0, "I'll research this across several sources."),
        a_stop_block(0),
        a_block(1, {"type": "server_tool_use", "id": "srvtoolu_01HeLd", "name": "web_search", "input": {}}),
        a_json(1, '{"query": "EU AI Act timeline"}'),
        a_stop_block(1),
        *a_end("pause_turn", 512),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "paused", _A.NONE, None),
)

# Anthropic docs "Compaction" (beta, pause_after_compaction); anthropic SDK BetaStopReason
_row(
    "finish",
    "anthropic",
    "compaction-then-pause",
    "a compaction block (the earlier context summarised), then stop_reason 'compaction': the turn paused"
    " after compacting, to be sent back; the summary is not the answer",
    stream(
        a_start("claude-opus-4-6"),
        a_block(0, {"type": "compaction", "content": None}),
        a_delta(0, {"type": "compaction_delta", "content": "The user is migrating a Django app to 5.2."}),
        a_stop_block(0),
        *a_end("compaction", 180),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "paused", _A.NONE, None),
)

# Anthropic docs "Web search tool" (errors: the result's content is a web_search_tool_result_error)
_row(
    "tool",
    "anthropic",
    "web-search-error-result",
    "a server web search whose result is an error object (max_uses_exceeded), then the model's answer: the"
    " provider ran the tool, the model read the error and answered; a whole answer",
    stream(
        a_start("claude-sonnet-4-6"),
        a_block(0, {"type": "server_tool_use", "id": "srvtoolu_01WsErr", "name": "web_search", "input": {}}),
        a_json(0, '{"query": "ECB rate decision'),
        a_json(0, ' December"}'),
        a_stop_block(0),
        a_block(
            1,
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_01WsErr",
                "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"},
            },
        ),
        a_stop_block(1),
        a_block(2, {"type": "text", "text": ""}),
        a_text(2, "I could not search again, but the last decision held rates."),
        a_stop_block(2),
        *a_end("end_turn", 60),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Anthropic docs "MCP connector" (beta): mcp_tool_use and mcp_tool_result blocks, is_error
_row(
    "tool",
    "anthropic",
    "mcp-call-and-failed-result",
    "an MCP call the provider made and its result marked is_error, then text: the provider ran it, the"
    " model answered; a whole answer, nothing for the agent to run",
    stream(
        a_start("claude-sonnet-4-6"),
        a_block(
            0,
            {"type": "mcp_tool_use", "id": "mcptoolu_01Lin", "name": "list_issues", "server_name": "linear"},
        ),
        a_json(0, '{"team": "core"}'),
        a_stop_block(0),
        a_block(
            1,
            {
                "type": "mcp_tool_result",
                "tool_use_id": "mcptoolu_01Lin",
                "is_error": True,
                "content": [{"type": "text", "text": "401 from the MCP server"}],
            },
        ),
        a_stop_block(1),
        a_block(2, {"type": "text", "text": ""}),
        a_text(2, "The Linear server refused the request."),
        a_stop_block(2),
        *a_end("end_turn", 40),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Anthropic docs "Fine-grained tool streaming": input streamed eagerly may be invalid JSON at max_tokens
_row(
    "tool",
    "anthropic",
    "eager-input-invalid-at-max-tokens",
    "fine-grained tool streaming: the input arrives unbuffered and the output limit ends it mid-value; the"
    " block is stopped on JSON that never parses: no call is handed out, the tool did not run",
    stream(
        a_start("claude-sonnet-4-6"),
        a_block(0, {"type": "tool_use", "id": "toolu_01Eag", "name": "write_file", "input": {}}),
        a_json(0, '{"path": "notes.md", "content": "# Plan\\n1. Measure'),
        a_stop_block(0),
        *a_end("max_tokens", 4096),
    ),
    (
        _C.TOOL_INPUT_INTERRUPTED,
        _V.NO_RETRY,
        _T.TOOL_INPUT_UNFINISHED,
        _P.TOOL_INPUT,
        "length",
        _A.FIX_REQUEST,
        None,
    ),
)

# Firebase Vertex AI FinishReason reference
_row(
    "finish",
    "gemini",
    "finish-other",
    "Gemini FinishReason OTHER ('model stopped for another reason'): not a whole answer",
    stream(
        g_chunk([{"text": "Here is the translation of the first"}]),
        g_chunk([{"text": " two paragraphs:"}], "OTHER", usageMetadata=G_USAGE),
    ),
    (
        _C.COMPLETED,
        _V.USER_CONFIRMED_RETRY,
        None,
        _P.FINISHED,
        "unrecognised",
        _A.CONTINUE_WITH_PARTIAL,
        None,
    ),
)

# vllm-project/vllm#27572
_row(
    "finish",
    "openai-chat",
    "done-without-finish-reason",
    "vLLM sometimes ends a chat stream with [DONE] and no finish_reason at all: nothing says it is whole",
    stream(
        *chat_text("The weather in Warsaw", " is", model="ibm/granite-3-8b-instruct"),
        DONE,
    ),
    (
        _C.COMPLETED,
        _V.USER_CONFIRMED_RETRY,
        None,
        _P.FINISHED,
        "unrecognised",
        _A.CONTINUE_WITH_PARTIAL,
        None,
    ),
)

# laravel/ai PR #955; camel-ai/camel#4266
_row(
    "finish",
    "openai-chat",
    "finish-model-length",
    "Mistral's finish_reason 'model_length' (the model's context length was reached): cut, not whole",
    stream(
        *chat_text("Chapter 1.", " It was a dark", model="mistral-large-latest"),
        chat({"content": ""}, "model_length", model="mistral-large-latest"),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "length", _A.NONE, None),
)

_WEATHER = {"type": "function", "function": {"name": "get_current_weather", "arguments": ""}}

# vllm-project/vllm#53269 (and PR #46303)
_row(
    "tool",
    "openai-chat",
    "tool-args-unparseable-at-tool-calls",
    "vLLM streaming reports 'tool_calls' for a call cut by max_tokens; its arguments do not parse",
    stream(
        chat({"role": "assistant", "content": None}, model="Qwen3-0.6B"),
        chat({"tool_calls": [{"index": 0, "id": "chatcmpl-tool-9d1", **_WEATHER}]}, model="Qwen3-0.6B"),
        chat(
            {"tool_calls": [{"index": 0, "function": {"arguments": '{"location": "Ber'}}]}, model="Qwen3-0.6B"
        ),
        chat({}, "tool_calls", model="Qwen3-0.6B"),
        DONE,
    ),
    (
        _C.TOOL_INPUT_INTERRUPTED,
        _V.USER_CONFIRMED_RETRY,
        _T.TOOL_INPUT_UNFINISHED,
        _P.TOOL_INPUT,
        "unparseable_arguments",
        _A.ASK_USER,
        None,
    ),
)


# MiaAI-Lab/DeepSeek-v4-Flash-DSpark-2x-DGX-Spark#55
_row(
    "tool",
    "openai-chat",
    "parallel-second-args-unparseable-at-tool-calls",
    "A call cut at max_tokens reported as 'tool_calls' with unterminated JSON: never callable",
    stream(
        chat({"role": "assistant", "content": ""}, model="deepseek-v4-flash"),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                    }
                ]
            },
            model="deepseek-v4-flash",
        ),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "write_file", "arguments": '{"path": "b.py", "content": "def f'},
                    }
                ]
            },
            model="deepseek-v4-flash",
        ),
        chat(
            {},
            "tool_calls",
            model="deepseek-v4-flash",
            usage={"prompt_tokens": 900, "completion_tokens": 300, "total_tokens": 1200},
        ),
        DONE,
    ),
    (
        _C.TOOL_INPUT_INTERRUPTED,
        _V.USER_CONFIRMED_RETRY,
        _T.TOOL_INPUT_UNFINISHED,
        _P.TOOL_INPUT,
        "unparseable_arguments",
        _A.ASK_USER,
        None,
    ),
)


# anomalyco/opencode PR #40969
_row(
    "tool",
    "openai-chat",
    "tool-call-empty-id-on-continuations",
    "DashScope repeats id '' on continuation deltas: one call, bash, complete arguments",
    stream(
        chat({"role": "assistant", "content": ""}, model="qwen3-max"),
        chat(
            {
                "tool_calls": [
                    {
                        "id": "call_a1ad8367bde7444f82142e8e",
                        "type": "function",
                        "index": 0,
                        "function": {"name": "bash", "arguments": ""},
                    }
                ]
            },
            model="qwen3-max",
        ),
        chat(
            {
                "tool_calls": [
                    {"id": "", "type": "function", "index": 0, "function": {"arguments": '{"command": '}}
                ]
            },
            model="qwen3-max",
        ),
        chat(
            {
                "tool_calls": [
                    {"id": "", "type": "function", "index": 0, "function": {"arguments": '"ls -la"}'}}
                ]
            },
            model="qwen3-max",
        ),
        chat({}, "tool_calls", model="qwen3-max"),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# anomalyco/opencode PR #37783; symfony/ai PR #2220
_row(
    "tool",
    "openai-chat",
    "tool-call-empty-id-and-name-on-continuations",
    "GLM via DashScope sends id '' and name '' on continuations: still one calculator call",
    stream(
        chat({"role": "assistant", "content": ""}, model="glm-5.2"),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_8c1f2e",
                        "type": "function",
                        "function": {"name": "calculator", "arguments": "{"},
                    }
                ]
            },
            model="glm-5.2",
        ),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "",
                        "type": "function",
                        "function": {"name": "", "arguments": '"expression": '},
                    }
                ]
            },
            model="glm-5.2",
        ),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "",
                        "type": "function",
                        "function": {"name": "", "arguments": '"2+2"}'},
                    }
                ]
            },
            model="glm-5.2",
        ),
        chat({}, "tool_calls", model="glm-5.2"),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# rbb-dev/Open-WebUI-OpenRouter-pipe PR #54
_row(
    "tool",
    "openai-responses",
    "tool-call-item-id-differs-from-call-id",
    "OpenRouter streams a call's arguments under item id fc_tmp_* and completes it under call_*: one call",
    (
        lambda r: stream(
            *r.opening(),
            r.ev(
                "response.output_item.added",
                output_index=0,
                item={
                    "id": "fc_tmp_7Qx",
                    "type": "function_call",
                    "status": "in_progress",
                    "arguments": "",
                    "call_id": "call_Yh7",
                    "name": "get_weather",
                },
            ),
            r.ev(
                "response.function_call_arguments.delta",
                item_id="fc_tmp_7Qx",
                output_index=0,
                delta='{"city":',
            ),
            r.ev(
                "response.function_call_arguments.delta",
                item_id="fc_tmp_7Qx",
                output_index=0,
                delta=' "Paris"}',
            ),
            r.ev(
                "response.function_call_arguments.done",
                item_id="fc_tmp_7Qx",
                output_index=0,
                arguments='{"city": "Paris"}',
            ),
            r.ev(
                "response.output_item.done",
                output_index=0,
                item={
                    "id": "call_Yh7",
                    "type": "function_call",
                    "status": "completed",
                    "arguments": '{"city": "Paris"}',
                    "call_id": "call_Yh7",
                    "name": "get_weather",
                },
            ),
            r.ev("response.completed", response=r.response("completed")),
        )
    )(Responses()),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# pipecat-ai/pipecat PR #5023 (fixes #4987)
_row(
    "tool",
    "openai-chat",
    "tool-call-id-and-name-in-separate-deltas",
    "id and name arrive in separate deltas (Azure via a Responses bridge, Mistral): one named call",
    stream(
        chat({"role": "assistant"}, model="gpt-4o"),
        chat(
            {
                "tool_calls": [
                    {"index": 0, "id": "call_P1pEcAt", "type": "function", "function": {"arguments": ""}}
                ]
            },
            model="gpt-4o",
        ),
        chat({"tool_calls": [{"index": 0, "function": {"name": "get_weather"}}]}, model="gpt-4o"),
        chat(
            {"tool_calls": [{"index": 0, "function": {"arguments": '{"location":"Boston"}'}}]}, model="gpt-4o"
        ),
        chat({}, "tool_calls", model="gpt-4o"),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# anthropics/claude-code#19143
_row(
    "tool",
    "anthropic",
    "text-then-tool-input-unparseable-at-stop",
    "Stream terminated with a stop before all tool-input chunks arrived: invalid JSON, the tool must not run",
    stream(
        a_start(),
        a_block(0, {"type": "text", "text": ""}),
        a_text(0, "现在我将创建第一批幻灯片："),
        a_stop_block(0),
        a_block(1, {"type": "tool_use", "id": "toolu_01HM8nkF", "name": "create_batch_slides", "input": {}}),
        a_json(1, '{"file_path_list": ["presentation/01.html","presentation/02.html","prese'),
        a_stop_block(1),
        *a_end("tool_use", 180),
    ),
    (
        _C.TOOL_INPUT_INTERRUPTED,
        _V.USER_CONFIRMED_RETRY,
        _T.TOOL_INPUT_UNFINISHED,
        _P.TOOL_INPUT,
        "unparseable_arguments",
        _A.CONTINUE_WITH_PARTIAL,
        None,
    ),
)

# strands-agents/harness-sdk PR #4309
_row(
    "tool",
    "openai-chat",
    "tool-args-cut-at-length-with-timings",
    "llama.cpp hits the token limit mid tool call: 'length', arguments cut, the tool must not run",
    stream(
        chat({"role": "assistant", "content": None}, model="gpt-oss-20b"),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "fc3dmY2",
                        "type": "function",
                        "function": {"name": "write_file", "arguments": ""},
                    }
                ]
            },
            model="gpt-oss-20b",
        ),
        chat(
            {"tool_calls": [{"index": 0, "function": {"arguments": '{"path": "report.md", "cont'}}]},
            model="gpt-oss-20b",
        ),
        chat({}, "length", model="gpt-oss-20b", timings={"predicted_n": 64}),
        DONE,
    ),
    (
        _C.TOOL_INPUT_INTERRUPTED,
        _V.NO_RETRY,
        _T.TOOL_INPUT_UNFINISHED,
        _P.TOOL_INPUT,
        "length",
        _A.FIX_REQUEST,
        None,
    ),
)

# anthropics/claude-code#66314 (also #4684)
_row(
    "error",
    "anthropic",
    "http-400-credit-balance-too-low",
    "Credits used up, sent as 400 invalid_request_error: a quota/billing failure, never retried",
    http_error(
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "Your credit balance is too low to access the Anthropic "
                "API. Please go to Plans & Billing to upgrade or purchase credits.",
            },
            "request_id": "req_011CbrFTcXhtiMzr3s6EocF7",
        },
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "quota_exhausted", _A.STOP, None),
)

# zai-org/feedback#789
_row(
    "error",
    "anthropic",
    "http-429-insufficient-balance",
    "Z.ai's Anthropic route: 429 typed rate_limit_error but the words say balance: quota, no retry",
    http_error(
        429,
        {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "code": "1113",
                "message": "[1113][Insufficient balance or no resource package. "
                "Please recharge.][20260922232915e8288c66f9ff4aaa]",
            },
            "request_id": "20260922232915e8288c66f9ff4aaa",
        },
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "quota_exhausted", _A.STOP, None),
)

# zai-org/GLM-5#148; 7836246/cursor2api#30
_row(
    "error",
    "openai-chat",
    "http-429-insufficient-balance",
    "Zhipu / Z.ai pay-as-you-go: 429 with code 1113 'Insufficient balance': quota, no retry",
    http_error(
        429,
        {
            "error": {
                "code": "1113",
                "message": "Insufficient balance or no resource package. Please recharge.",
            }
        },
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "quota_exhausted", _A.STOP, None),
)


# BerriAI/litellm#36729 (and PR #37000)
_row(
    "error",
    "openai-chat",
    "http-429-budget-exceeded",
    "The same budget_exceeded sent as 429: spending limit, not a rate limit, never retried",
    http_error(
        429,
        {
            "error": {
                "message": "Budget has been exceeded! Current cost: 10.51, Max budget: 10.00",
                "type": "budget_exceeded",
                "param": None,
                "code": "429",
            }
        },
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "quota_exhausted", _A.STOP, None),
)


# alex-wolf-ps/dbchatprov2#2; assafelovic/gpt-researcher#936; jasonacox/TinyLLM#17
_row(
    "error",
    "openai-chat",
    "http-429-retry-after-a-day-in-words",
    "Azure S0 tier: 'Please retry after 86400 seconds' in the body: a day away, no automatic retry",
    http_error(
        429,
        {
            "error": {
                "code": "429",
                "message": "Requests to the ChatCompletions_Create Operation under "
                "Azure OpenAI API version 2024-05-01-preview have exceeded token rate limit of your "
                "current OpenAI S0 pricing tier. Please retry after 86400 seconds. Please go here: "
                "https://aka.ms/oai/quotaincrease if you would like to further increase the default "
                "rate limit.",
            }
        },
    ),
    (
        _C.PROVIDER_ERROR,
        _V.USER_CONFIRMED_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "rate_limit",
        _A.ASK_USER,
        86400.0,  # the wait the message states in words
    ),
)

# langchain-ai/langchain-google#355
_row(
    "error",
    "gemini",
    "http-429-per-minute-quota-exceeded",
    "Vertex per-minute quota (RESOURCE_EXHAUSTED): says 'quota' but clears in a minute: a rate limit",
    http_error(
        429,
        {
            "error": {
                "code": 429,
                "message": "Quota exceeded for aiplatform.googleapis.com/"
                "generate_content_requests_per_minute_per_project_per_base_model with base model: "
                "gemini-1.5-pro. Please submit a quota increase request. "
                "https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai.",
                "status": "RESOURCE_EXHAUSTED",
            }
        },
    ),
    (
        _C.PROVIDER_ERROR,
        _V.SAFE_AUTO_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "rate_limit",
        _A.RETRY_AFTER_BACKOFF,
        None,
    ),
)

# google-gemini/gemini-cli#13004
_row(
    "error",
    "gemini",
    "http-429-quota-reset-hours-away",
    "A plan limit whose reset is hours away (8h44m): not an automatic retry",
    http_error(
        429,
        {
            "error": {
                "code": 429,
                "message": "You have exhausted your capacity on this model. Your quota "
                "will reset after 8h44m7s.",
                "errors": [
                    {
                        "message": "You have exhausted your capacity on this model. Your quota "
                        "will reset after 8h44m7s.",
                        "domain": "global",
                        "reason": "rateLimitExceeded",
                    }
                ],
                "status": "RESOURCE_EXHAUSTED",
            }
        },
    ),
    (
        _C.PROVIDER_ERROR,
        _V.USER_CONFIRMED_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "rate_limit",
        _A.ASK_USER,
        31447.0,  # "reset after 8h44m7s"
    ),
)

# google-gemini/gemini-cli#27548
_row(
    "error",
    "gemini",
    "http-429-no-capacity",
    "No capacity on the server (RESOURCE_EXHAUSTED, rateLimitExceeded): transient, safe to retry",
    http_error(
        429,
        {
            "error": {
                "code": 429,
                "message": "No capacity available for model gemini-3.1-flash-lite on the server",
                "errors": [
                    {
                        "message": "No capacity available for model gemini-3.1-flash-lite on the server",
                        "domain": "global",
                        "reason": "rateLimitExceeded",
                    }
                ],
                "status": "RESOURCE_EXHAUSTED",
            }
        },
    ),
    (
        _C.PROVIDER_ERROR,
        _V.SAFE_AUTO_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "rate_limit",
        _A.RETRY_AFTER_BACKOFF,
        None,
    ),
)

# Gitlawb/openclaude#936; OpenRouter docs, errors and debugging; Avarok-Cybersecurity/atlas PR #543
_row(
    "error",
    "openai-chat",
    "in-band-per-day-limit",
    "OpenRouter daily free-model cap as an in-band error at 200: resets at midnight UTC, no automatic retry",
    stream(
        sse(
            {
                "error": {
                    "message": "Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free "
                    "model requests per day",
                    "code": 429,
                    "metadata": {
                        "headers": {
                            "X-RateLimit-Limit": "50",
                            "X-RateLimit-Remaining": "0",
                        }
                    },
                }
            }
        ),
    ),
    (
        _C.PROVIDER_ERROR,
        _V.NO_RETRY,
        _T.PROVIDER_ERROR_EVENT,
        _P.EARLY_STREAM,
        "quota_exhausted",
        _A.STOP,
        None,
    ),
)

# Kimi Code error reference (usage limit for the billing cycle, HTTP 403)
_row(
    "error",
    "openai-chat",
    "http-403-usage-limit-for-billing-cycle",
    "Kimi: 403 'usage limit for this billing cycle': a plan limit (quota), not a permission error",
    http_error(
        403,
        {
            "error": {
                "message": "You've reached your usage limit for this billing cycle. Please upgrade "
                "your plan or wait for the next cycle.",
                "type": "access_terminated_error",
            }
        },
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "quota_exhausted", _A.STOP, None),
)

# continuedev/continue#6185
_row(
    "error",
    "openai-chat",
    "http-429-service-tier-capacity-exceeded",
    "Mistral: capacity exceeded, typed invalid_request_error: transient capacity, safe to retry after a wait",
    http_error(
        429,
        {
            "object": "error",
            "message": "Service tier capacity exceeded for this model.",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        },
    ),
    (
        _C.PROVIDER_ERROR,
        _V.SAFE_AUTO_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "rate_limit",
        _A.RETRY_AFTER_BACKOFF,
        None,
    ),
)

# Kimi Code error reference ("The engine is currently overloaded", HTTP 429)
_row(
    "error",
    "openai-chat",
    "http-429-engine-overloaded",
    "Moonshot/Kimi 429 engine_overloaded_error: the provider is overloaded, safe to retry",
    http_error(
        429,
        {
            "error": {
                "message": "The engine is currently overloaded, please try again later",
                "type": "engine_overloaded_error",
            }
        },
    ),
    (
        _C.PROVIDER_ERROR,
        _V.SAFE_AUTO_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "overloaded",
        _A.RETRY_AFTER_BACKOFF,
        None,
    ),
)

# cohere-ai/cohere-developer-experience PR #199
_row(
    "error",
    "openai-chat",
    "http-429-trial-key-monthly-limit",
    "Cohere trial key's monthly call limit: plan limit, resets next month, no automatic retry",
    http_error(
        429,
        {
            "message": "You are using a Trial key, which is limited to 1000 API calls / month. You can "
            "continue to use the Trial key for free or upgrade to a Production key with higher rate limits "
            "at 'https://dashboard.cohere.com/api-keys'."
        },
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "quota_exhausted", _A.STOP, None),
)

# BerriAI/litellm#16272 (raw Mistral stream); NousResearch/hermes-agent#11243
_row(
    "content",
    "openai-chat",
    "content-parts-thinking-then-text",
    "Magistral streams delta.content as a list of typed parts (thinking, then text): the text is the answer",
    stream(
        chat({"role": "assistant", "content": ""}, cid="c3c77283", model="magistral-medium-2509"),
        chat(
            {
                "content": [
                    {"type": "thinking", "thinking": [{"type": "text", "text": "The user greets me."}]}
                ]
            },
            cid="c3c77283",
            model="magistral-medium-2509",
        ),
        chat(
            {"content": [{"type": "text", "text": "Hello! How can I help you today?"}]},
            cid="c3c77283",
            model="magistral-medium-2509",
        ),
        chat(
            {"content": ""},
            "stop",
            cid="c3c77283",
            model="magistral-medium-2509",
            usage={"prompt_tokens": 5, "completion_tokens": 40, "total_tokens": 45},
        ),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# coddy-project/coddy-agent PR #106; ggml-org/llama.cpp PR #16109 (the fix)
_row(
    "content",
    "openai-chat",
    "error-sse-field-context-overflow",
    "llama.cpp (2025 builds) sends a mid-stream error on a non-standard 'error:' SSE field, then [DONE]",
    stream(
        b'error: {"code":400,"message":"the request exceeds the available context size. try increasing the '
        b'context size or enable context shift","type":"invalid_request_error"}\n\n',
        DONE,
    ),
    (
        _C.PROVIDER_ERROR,
        _V.NO_RETRY,
        _T.PROVIDER_ERROR_EVENT,
        _P.EARLY_STREAM,
        "context_overflow",
        _A.FIX_REQUEST,
        None,
    ),
)

# block/goose PR #8031
_row(
    "content",
    "openai-chat",
    "object-error-after-output-then-done",
    "vLLM's error shape {'object': 'error', ...} mid-stream (no 'error' key): a provider error after output;"
    " its words say the GPU ran out of memory, which no wait cures, whatever the 500 says",
    stream(
        *chat_text("Sure, here is", " the summary:", model="meta-llama/Llama-3.1-8B-Instruct"),
        sse(
            {
                "object": "error",
                "message": "Internal server error: CUDA out of memory.",
                "type": "InternalServerError",
                "param": None,
                "code": 500,
            }
        ),
        DONE,
    ),
    (
        _C.PROVIDER_ERROR,
        _V.NO_RETRY,
        _T.PROVIDER_ERROR_EVENT,
        _P.MID_GENERATION,
        "model_unavailable",
        _A.FIX_REQUEST,
        None,
    ),
)

# vllm-project/vllm PR #40986 (fixes #40978)
_row(
    "content",
    "openai-chat",
    "done-without-any-output",
    "vLLM dropped a first-token error, sent a role chunk and [DONE]: nothing read, not whole",
    stream(
        chat({"role": "assistant", "content": ""}, model="Qwen/Qwen3-8B"),
        DONE,
    ),
    (_C.COMPLETED, _V.USER_CONFIRMED_RETRY, None, _P.FINISHED, "unrecognised", _A.ASK_USER, None),
)

# Chevey339/kelivo#1003 (and PR #1002)
_row(
    "content",
    "gemini",
    "empty-stop-chunk-then-text",
    "A translating gateway sends empty STOP candidates before the text: the text that follows is the answer",
    stream(
        g_chunk([], "STOP"),
        g_chunk([], "STOP"),
        g_chunk([{"text": "Gemini streams"}]),
        g_chunk([{"text": " the whole answer."}]),
        g_chunk([], "STOP", usageMetadata=G_USAGE),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# MartialBE/one-hub#402; songquanpeng/one-api#1408
_row(
    "content",
    "gemini",
    "stop-on-every-chunk",
    "Gemini/Vertex put finishReason STOP on every chunk: all of the text arrives and the answer is whole",
    stream(
        g_chunk([{"text": "你好"}], "STOP"),
        g_chunk([{"text": "！很高兴认识你。"}], "STOP"),
        g_chunk([{"text": "请问有什么问题需要我解答吗？"}], "STOP", usageMetadata=G_USAGE),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Sophomoresty/gemini-web2api PR #57
_row(
    "content",
    "openai-responses",
    "output-text-done-only",
    "A web-to-API bridge's Responses stream carries the answer only in response.output_text.done",
    (
        lambda r: stream(
            r.ev("response.created", response=r.response("in_progress")),
            r.ev(
                "response.output_text.done",
                output_index=0,
                content_index=0,
                item_id="msg_web2api",
                text="Paris is the capital of France.",
            ),
            r.ev("response.completed", response=r.response("completed")),
        )
    )(Responses(rid="resp_web2api", model="gemini-3-pro")),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)


# AbanteAI/archive-old-cli-mentat#429; pydantic/pydantic-ai#797
_row(
    "stream",
    "openai-chat",
    "prompt-filter-results-first",
    "Azure's first chunk has no choices, only prompt_filter_results; the answer is whole",
    stream(
        chat(
            None,
            cid="",
            model="",
            prompt_filter_results=[
                {
                    "prompt_index": 0,
                    "content_filter_results": {
                        "hate": {"filtered": False, "severity": "safe"},
                        "self_harm": {"filtered": False, "severity": "safe"},
                        "sexual": {"filtered": False, "severity": "safe"},
                        "violence": {"filtered": False, "severity": "safe"},
                    },
                }
            ],
        ),
        chat(
            {"role": "assistant", "content": ""},
            model="gpt-4o-2024-08-06",
            choice_extra={"content_filter_results": {}},
        ),
        chat(
            {"content": "Azure says hello."},
            model="gpt-4o-2024-08-06",
            choice_extra={"content_filter_results": {"hate": {"filtered": False, "severity": "safe"}}},
        ),
        chat({}, "stop", model="gpt-4o-2024-08-06", choice_extra={"content_filter_results": {}}),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# karthink/gptel PR #592
_row(
    "stream",
    "openai-chat",
    "data-without-space-reasoning-then-text",
    "DashScope's deepseek-r1: 'data:' with no space, reasoning_content then content, finish stop: whole",
    stream(
        sse(
            {
                "model": "deepseek-r1",
                "id": "chatcmpl-75945b6f",
                "choices": [{"index": 0, "delta": {"role": "assistant"}}],
                "created": 1740552606,
                "object": "chat.completion.chunk",
            },
            space=False,
        ),
        sse(
            {
                "model": "deepseek-r1",
                "id": "chatcmpl-75945b6f",
                "choices": [
                    {"index": 0, "delta": {"reasoning_content": "Okay, the user", "role": "assistant"}}
                ],
                "created": 1740552606,
                "object": "chat.completion.chunk",
            },
            space=False,
        ),
        sse(
            {
                "model": "deepseek-r1",
                "id": "chatcmpl-75945b6f",
                "choices": [{"index": 0, "delta": {"content": "Hi there!", "role": "assistant"}}],
                "created": 1740552606,
                "object": "chat.completion.chunk",
            },
            space=False,
        ),
        sse(
            {
                "model": "deepseek-r1",
                "id": "chatcmpl-75945b6f",
                "choices": [
                    {"index": 0, "delta": {"content": "", "role": "assistant"}, "finish_reason": "stop"}
                ],
                "created": 1740552606,
                "object": "chat.completion.chunk",
            },
            space=False,
        ),
        b"data:[DONE]\n\n",
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# ollama/ollama PR #5915
_row(
    "stream",
    "openai-chat",
    "whole-tool-call-in-one-chunk",
    "Ollama sends a whole call (no index) and finish_reason 'tool_calls' in one chunk: one callable call",
    stream(
        chat(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_ejieksiz",
                        "type": "function",
                        "function": {"name": "function_1", "arguments": '{"a":10,"b":11}'},
                    }
                ],
            },
            "tool_calls",
            cid="chatcmpl-20",
            model="llama3-groq-tool-use:8b",
            system_fingerprint="fp_ollama",
        ),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Anthropic docs, streaming messages and "Handling stop reasons" (as above)
_row(
    "stream",
    "anthropic",
    "pings-then-stop-sequence",
    "stop_reason 'stop_sequence' (a caller's stop sequence fired) with pings between deltas: a whole answer",
    stream(
        a_start(),
        A_PING,
        a_block(0, {"type": "text", "text": ""}),
        a_text(0, "1. Apples\n2. Pears\n"),
        A_PING,
        a_text(0, "3. Plums\n"),
        a_stop_block(0),
        *a_end("stop_sequence", 14, stop_sequence="4."),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# nowledge-co/nowledge-mem#86
_row(
    "stream",
    "openai-responses",
    "reasoning-only-then-incomplete",
    "Only reasoning, then response.incomplete for max_output_tokens: no answer at all, not whole",
    (
        lambda r: stream(
            *r.opening(),
            r.ev(
                "response.output_item.added",
                output_index=0,
                item={"id": "rs_01", "type": "reasoning", "summary": []},
            ),
            r.ev(
                "response.reasoning_summary_text.delta",
                item_id="rs_01",
                output_index=0,
                summary_index=0,
                delta="The user wants JSON only.",
            ),
            r.ev(
                "response.reasoning_summary_text.done",
                item_id="rs_01",
                output_index=0,
                summary_index=0,
                text="The user wants JSON only.",
            ),
            r.ev(
                "response.incomplete",
                response=r.response("incomplete", incomplete_details={"reason": "max_output_tokens"}),
            ),
        )
    )(Responses(model="deepseek-v4-flash:0731")),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "length", _A.NONE, None),
)


# ollama/ollama#4357
_row(
    "stream",
    "openai-chat",
    "empty-finish-reason-on-every-chunk",
    "Ollama sent finish_reason '' (empty string) on every chunk before 'stop': all text, whole answer",
    stream(
        *(
            chat(
                {"role": "assistant", "content": piece},
                "",
                cid="chatcmpl-693",
                model="mistral:latest",
                system_fingerprint="fp_ollama",
            )
            for piece in ("Let me know", " if", " you", " have", " any", " questions.")
        ),
        chat({"role": "assistant", "content": ""}, "stop", cid="chatcmpl-693", model="mistral:latest"),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Portkey-AI/gateway#1072
_row(
    "stream",
    "openai-chat",
    "usage-in-extension-field-of-final-chunk",
    "Groq adds an x_groq object (with its usage) to chunks; finish stop: a whole answer",
    stream(
        *chat_text("Groq", " is fast.", model="llama-3.1-8b-instant", x_groq={"id": "req_01heldout"}),
        chat(
            {},
            "stop",
            model="llama-3.1-8b-instant",
            x_groq={
                "id": "req_01heldout",
                "usage": {
                    "queue_time": 0.01,
                    "prompt_tokens": 12,
                    "completion_tokens": 4,
                    "total_tokens": 16,
                },
            },
        ),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# PowerShell/AIShell#350 (fixed in KoboldCpp commit c55bb9a)
_row(
    "stream",
    "openai-chat",
    "finish-reason-null-as-string",
    "KoboldCpp sent the string 'null' as finish_reason on every chunk before 'stop': not a finish; all text",
    stream(
        *(
            chat({"content": piece}, "null", cid="chatcmpl-kcpp", model="koboldcpp/llama")
            for piece in ("Once", " upon", " a", " time.")
        ),
        chat({"content": ""}, "stop", cid="chatcmpl-kcpp", model="koboldcpp/llama"),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# SaladDay/cc-switch-cli PR #320; farion1231/cc-switch PR #7396
_row(
    "stream",
    "anthropic",
    "message-start-without-content",
    "A converting proxy's message_start lacks content/stop_reason/stop_sequence; the answer is whole",
    stream(
        sse(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_proxy01",
                    "type": "message",
                    "role": "assistant",
                    "model": "gpt-4.1",
                    "usage": {"input_tokens": 12},
                },
            },
            "message_start",
        ),
        a_block(0, {"type": "text", "text": ""}),
        a_text(0, "Converted from an OpenAI-compatible backend."),
        a_stop_block(0),
        *a_end("end_turn", 9),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# openai/openai-dotnet#706
_row(
    "stream",
    "openai-chat",
    "extensions-chunks-with-end-turn",
    "Azure 'On your data' streams object extensions.chat.completion.chunk with end_turn: a whole answer",
    stream(
        sse(
            {
                "id": "2f5de4d2",
                "model": "gpt-4.1-mini",
                "created": 1758571978,
                "object": "extensions.chat.completion.chunk",
                "choices": [
                    {"index": 0, "delta": {"content": "Hi there!"}, "end_turn": False, "finish_reason": None}
                ],
                "system_fingerprint": "fp_4f3d32ad4e",
            }
        ),
        sse(
            {
                "id": "2f5de4d2",
                "model": "gpt-4.1-mini",
                "created": 1758571978,
                "object": "extensions.chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "end_turn": True, "finish_reason": "stop"}],
                "system_fingerprint": "fp_4f3d32ad4e",
            }
        ),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# 8monkey-ai/hebo-gateway#71
_row(
    "content",
    "openai-chat",
    "error-event-invalid-request-then-done",
    "A gateway reports the upstream's 400 in-band ('event: error', an error object) then [DONE]: not retried",
    stream(
        sse(
            {
                "error": {
                    "message": "messages[0].content must be a string",
                    "type": "invalid_request_error",
                    "code": "upstream_bad_request",
                    "param": "",
                }
            },
            "error",
        ),
        DONE,
    ),
    (
        _C.PROVIDER_ERROR,
        _V.NO_RETRY,
        _T.PROVIDER_ERROR_EVENT,
        _P.EARLY_STREAM,
        "invalid_request",
        _A.FIX_REQUEST,
        None,
    ),
)


# -- the fresh set (tests/fresh, sources in its SOURCES.md) -------------------------------------------
# Its wire builders, shared with tests/fresh/shapes.py.


def responses_wire(
    build: Callable[[Responses], tuple[Step, ...]], model: str = "gpt-5.1"
) -> tuple[Step, ...]:
    return build(Responses(rid="resp_fr35h", model=model))


NDJSON: Final = Headers(headers=(("content-type", "application/x-ndjson"),))


BEDROCK: Final = Headers(headers=(("content-type", EVENT_STREAM), ("x-amzn-requestid", "5e1d-fr35h")))


def ndjson_lines(*frames: bytes, head: Headers = NDJSON) -> tuple[Step, ...]:
    return (head, *(Send(f) for f in frames), End())


def custom_tool_events(r: Responses) -> tuple[Step, ...]:
    item = {"id": "ctc_0fr35h", "type": "custom_tool_call", "status": "in_progress", "call_id": "call_c1"}
    done = {**item, "status": "completed", "name": "shell", "input": "echo hello"}
    return stream(
        *r.opening(),
        r.ev(
            "response.output_item.added",
            output_index=0,
            item={"id": "rs_0fr35h", "type": "reasoning", "summary": []},
        ),
        r.ev(
            "response.output_item.done",
            output_index=0,
            item={"id": "rs_0fr35h", "type": "reasoning", "summary": [], "encrypted_content": "gAAAAB"},
        ),
        r.ev("response.output_item.added", output_index=1, item={**item, "input": "", "name": "shell"}),
        r.ev("response.custom_tool_call_input.delta", item_id="ctc_0fr35h", output_index=1, delta="echo"),
        r.ev("response.custom_tool_call_input.delta", item_id="ctc_0fr35h", output_index=1, delta=" hello"),
        r.ev(
            "response.custom_tool_call_input.done", item_id="ctc_0fr35h", output_index=1, input="echo hello"
        ),
        r.ev("response.output_item.done", output_index=1, item=done),
        r.ev("response.completed", response=r.response("completed", output=[done])),
    )


def parallel_call_events(r: Responses) -> tuple[Step, ...]:
    titles = ["Organize the digital photo folder", "Try a new recipe for dinner", "Take a 20-minute walk"]
    items = [
        {"id": f"fc_{i}fr35h", "type": "function_call", "status": "in_progress", "call_id": f"call_t{i}"}
        for i in range(3)
    ]
    args = [_json({"title": t}) for t in titles]
    frames = list(r.opening())
    for i, item in enumerate(items):
        frames.append(
            r.ev(
                "response.output_item.added",
                output_index=i,
                item={**item, "name": "add_task", "arguments": ""},
            )
        )
    # The three calls' argument deltas interleave; each is keyed by its item id and output index.
    for cut in range(0, max(len(a) for a in args), 9):
        for i, a in enumerate(args):
            if cut < len(a):
                frames.append(
                    r.ev(
                        "response.function_call_arguments.delta",
                        item_id=items[i]["id"],
                        output_index=i,
                        delta=a[cut : cut + 9],
                    )
                )
    done = []
    for i, item in enumerate(items):
        frames.append(
            r.ev(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=i,
                name="add_task",
                arguments=args[i],
            )
        )
        whole_item = {**item, "status": "completed", "name": "add_task", "arguments": args[i]}
        done.append(whole_item)
        frames.append(r.ev("response.output_item.done", output_index=i, item=whole_item))
    frames.append(r.ev("response.completed", response=r.response("completed", output=done)))
    return stream(*frames)


def message_events(
    r: Responses, index: int, *pieces: str, annotations: list[dict[str, Any]] | None = None
) -> list[bytes]:
    mid = f"msg_{index}fr35h"
    text = "".join(pieces)
    part = {"type": "output_text", "text": "", "annotations": []}
    out = [
        r.ev(
            "response.output_item.added",
            output_index=index,
            item={"id": mid, "type": "message", "status": "in_progress", "role": "assistant", "content": []},
        ),
        r.ev("response.content_part.added", item_id=mid, output_index=index, content_index=0, part=part),
    ]
    for piece in pieces:
        out.append(
            r.ev(
                "response.output_text.delta",
                item_id=mid,
                output_index=index,
                content_index=0,
                delta=piece,
                logprobs=[],
            )
        )
    for n, annotation in enumerate(annotations or []):
        out.append(
            r.ev(
                "response.output_text.annotation.added",
                item_id=mid,
                output_index=index,
                content_index=0,
                annotation_index=n,
                annotation=annotation,
            )
        )
    whole = {"type": "output_text", "text": text, "annotations": annotations or []}
    out += [
        r.ev(
            "response.output_text.done",
            item_id=mid,
            output_index=index,
            content_index=0,
            text=text,
            logprobs=[],
        ),
        r.ev("response.content_part.done", item_id=mid, output_index=index, content_index=0, part=whole),
        r.ev(
            "response.output_item.done",
            output_index=index,
            item={
                "id": mid,
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [whole],
            },
        ),
    ]
    return out


def mcp_call_events(r: Responses) -> tuple[Step, ...]:
    tools = {"id": "mcpl_0fr35h", "type": "mcp_list_tools", "server_label": "deepwiki", "tools": []}
    listed = {**tools, "tools": [{"name": "ask_question", "input_schema": {"type": "object"}}]}
    args = _json({"repoName": "modelcontextprotocol/modelcontextprotocol", "question": "transports?"})
    call = {"id": "mcp_1fr35h", "type": "mcp_call", "server_label": "deepwiki", "name": "ask_question"}
    return stream(
        *r.opening(),
        r.ev("response.output_item.added", output_index=0, item=tools),
        r.ev("response.mcp_list_tools.in_progress", item_id="mcpl_0fr35h", output_index=0),
        r.ev("response.mcp_list_tools.completed", item_id="mcpl_0fr35h", output_index=0),
        r.ev("response.output_item.done", output_index=0, item=listed),
        r.ev(
            "response.output_item.added", output_index=1, item={**call, "arguments": "", "status": "calling"}
        ),
        r.ev("response.mcp_call.in_progress", item_id="mcp_1fr35h", output_index=1),
        r.ev("response.mcp_call_arguments.delta", item_id="mcp_1fr35h", output_index=1, delta=args[:30]),
        r.ev("response.mcp_call_arguments.delta", item_id="mcp_1fr35h", output_index=1, delta=args[30:]),
        r.ev("response.mcp_call_arguments.done", item_id="mcp_1fr35h", output_index=1, arguments=args),
        r.ev("response.mcp_call.completed", item_id="mcp_1fr35h", output_index=1),
        r.ev(
            "response.output_item.done",
            output_index=1,
            item={**call, "arguments": args, "status": "completed", "output": "stdio and Streamable HTTP"},
        ),
        *message_events(r, 2, "The 2025-03-26 spec supports", " stdio and Streamable HTTP."),
        r.ev("response.completed", response=r.response("completed")),
    )


def mcp_approval_events(r: Responses) -> tuple[Step, ...]:
    request = {
        "id": "mcpr_0fr35h",
        "type": "mcp_approval_request",
        "server_label": "deepwiki",
        "name": "ask_question",
        "arguments": _json({"repoName": "openai/codex", "question": "What is apply_patch?"}),
    }
    return stream(
        *r.opening(),
        r.ev("response.output_item.added", output_index=0, item=request),
        r.ev("response.output_item.done", output_index=0, item=request),
        r.ev("response.completed", response=r.response("completed", output=[request])),
    )


def web_search_events(r: Responses) -> tuple[Step, ...]:
    search = {"id": "ws_0fr35h", "type": "web_search_call", "status": "in_progress"}
    cite = {
        "type": "url_citation",
        "start_index": 0,
        "end_index": 38,
        "url": "https://www.example.org/eu-ai-act",
        "title": "EU AI Act timeline",
    }
    return stream(
        *r.opening(),
        r.ev("response.output_item.added", output_index=0, item=search),
        r.ev("response.web_search_call.in_progress", item_id="ws_0fr35h", output_index=0),
        r.ev("response.web_search_call.searching", item_id="ws_0fr35h", output_index=0),
        r.ev("response.web_search_call.completed", item_id="ws_0fr35h", output_index=0),
        r.ev(
            "response.output_item.done",
            output_index=0,
            item={**search, "status": "completed", "action": {"type": "search", "query": "EU AI Act dates"}},
        ),
        *message_events(
            r, 1, "The Act's obligations for GPAI models", " apply from August 2025.", annotations=[cite]
        ),
        r.ev("response.completed", response=r.response("completed")),
    )


def code_interpreter_events(r: Responses) -> tuple[Step, ...]:
    ci = {
        "id": "ci_0fr35h",
        "type": "code_interpreter_call",
        "status": "in_progress",
        "container_id": "cntr_1",
    }
    code = "import math\nprint(math.factorial(20))"
    return stream(
        *r.opening(),
        r.ev("response.output_item.added", output_index=0, item={**ci, "code": ""}),
        r.ev("response.code_interpreter_call.in_progress", item_id="ci_0fr35h", output_index=0),
        r.ev(
            "response.code_interpreter_call_code.delta", item_id="ci_0fr35h", output_index=0, delta=code[:12]
        ),
        r.ev(
            "response.code_interpreter_call_code.delta", item_id="ci_0fr35h", output_index=0, delta=code[12:]
        ),
        r.ev("response.code_interpreter_call_code.done", item_id="ci_0fr35h", output_index=0, code=code),
        r.ev("response.code_interpreter_call.interpreting", item_id="ci_0fr35h", output_index=0),
        r.ev("response.code_interpreter_call.completed", item_id="ci_0fr35h", output_index=0),
        r.ev(
            "response.output_item.done",
            output_index=0,
            item={
                **ci,
                "status": "completed",
                "code": code,
                "outputs": [{"type": "logs", "logs": "2432902008176640000\n"}],
            },
        ),
        *message_events(r, 1, "20! is ", "2432902008176640000."),
        r.ev("response.completed", response=r.response("completed")),
    )


def image_generation_events(r: Responses) -> tuple[Step, ...]:
    ig = {"id": "ig_0fr35h", "type": "image_generation_call", "status": "in_progress"}
    return stream(
        *r.opening(),
        r.ev("response.output_item.added", output_index=0, item=ig),
        r.ev("response.image_generation_call.in_progress", item_id="ig_0fr35h", output_index=0),
        r.ev("response.image_generation_call.generating", item_id="ig_0fr35h", output_index=0),
        r.ev(
            "response.image_generation_call.partial_image",
            item_id="ig_0fr35h",
            output_index=0,
            partial_image_index=0,
            partial_image_b64="iVBORw0KGgo=",
        ),
        r.ev("response.image_generation_call.completed", item_id="ig_0fr35h", output_index=0),
        r.ev(
            "response.output_item.done",
            output_index=0,
            item={**ig, "status": "completed", "result": "iVBORw0KGgoAAAANSUhEUg==", "output_format": "png"},
        ),
        r.ev("response.completed", response=r.response("completed")),
    )


def shell_call_events(r: Responses) -> tuple[Step, ...]:
    item = {"id": "sh_0fr35h", "type": "shell_call", "call_id": "call_sh1", "status": "in_progress"}
    action = {"commands": ["ls -la", "git status"], "timeout_ms": 120000, "max_output_length": 4096}
    return stream(
        *r.opening(),
        r.ev("response.output_item.added", output_index=0, item={**item, "action": {"commands": []}}),
        r.ev("response.shell_call_command.added", output_index=0, command_index=0, command=""),
        r.ev("response.shell_call_command.delta", output_index=0, command_index=0, delta="ls -la"),
        r.ev("response.shell_call_command.done", output_index=0, command_index=0, command="ls -la"),
        r.ev("response.shell_call_command.added", output_index=0, command_index=1, command=""),
        r.ev("response.shell_call_command.delta", output_index=0, command_index=1, delta="git status"),
        r.ev("response.shell_call_command.done", output_index=0, command_index=1, command="git status"),
        r.ev(
            "response.output_item.done",
            output_index=0,
            item={**item, "status": "completed", "action": action},
        ),
        r.ev("response.completed", response=r.response("completed")),
    )


def apply_patch_events(r: Responses) -> tuple[Step, ...]:
    operation = {"type": "update_file", "path": "src/app.py", "diff": "@@\n-print('hi')\n+print('hello')\n"}
    item = {"id": "apc_0fr35h", "type": "apply_patch_call", "call_id": "call_ap1", "operation": operation}
    return stream(
        *r.opening(),
        r.ev("response.output_item.added", output_index=0, item={**item, "status": "in_progress"}),
        r.ev("response.output_item.done", output_index=0, item={**item, "status": "completed"}),
        r.ev(
            "response.completed", response=r.response("completed", output=[{**item, "status": "completed"}])
        ),
    )


def compaction_events(r: Responses) -> tuple[Step, ...]:
    item = {"id": "cmp_0fr35h", "type": "compaction", "encrypted_content": "gAAAAABpZ2Vu"}
    return stream(
        *r.opening(),
        r.ev("response.output_item.added", output_index=0, item=item),
        r.ev("response.output_item.done", output_index=0, item=item),
        *message_events(r, 1, "Picking up where we left off:", " the migration is done."),
        r.ev("response.completed", response=r.response("completed")),
    )


def reasoning_then_call_events(r: Responses) -> tuple[Step, ...]:
    rs = {"id": "rs_0fr35h", "type": "reasoning", "summary": []}
    fc = {"id": "fc_0fr35h", "type": "function_call", "call_id": "call_w1", "name": "get_weather"}
    args = _json({"city": "Paris", "unit": "celsius"})
    summary = {"type": "summary_text", "text": "Need the weather tool."}
    return stream(
        *r.opening(),
        r.ev("response.output_item.added", output_index=0, item=rs),
        r.ev(
            "response.reasoning_summary_part.added",
            item_id="rs_0fr35h",
            output_index=0,
            summary_index=0,
            part={"type": "summary_text", "text": ""},
        ),
        r.ev(
            "response.reasoning_summary_text.delta",
            item_id="rs_0fr35h",
            output_index=0,
            summary_index=0,
            delta="Need the weather tool.",
        ),
        r.ev(
            "response.reasoning_summary_text.done",
            item_id="rs_0fr35h",
            output_index=0,
            summary_index=0,
            text="Need the weather tool.",
        ),
        r.ev(
            "response.reasoning_summary_part.done",
            item_id="rs_0fr35h",
            output_index=0,
            summary_index=0,
            part=summary,
        ),
        r.ev(
            "response.output_item.done",
            output_index=0,
            item={**rs, "summary": [summary], "encrypted_content": "gAAAAABo"},
        ),
        r.ev(
            "response.output_item.added",
            output_index=1,
            item={**fc, "arguments": "", "status": "in_progress"},
        ),
        r.ev("response.function_call_arguments.delta", item_id="fc_0fr35h", output_index=1, delta=args[:10]),
        r.ev("response.function_call_arguments.delta", item_id="fc_0fr35h", output_index=1, delta=args[10:]),
        r.ev("response.function_call_arguments.done", item_id="fc_0fr35h", output_index=1, arguments=args),
        r.ev(
            "response.output_item.done", output_index=1, item={**fc, "arguments": args, "status": "completed"}
        ),
        r.ev("response.completed", response=r.response("completed")),
    )


ADD_ARGS, WEATHER_ARGS = (
    _json({"a": 2, "b": 2}),
    _json({"location": "Tokyo", "unit": "celsius"}),
)


FILE_ARGS = _json({"path": "notes/todo.md", "content": "# TODO\n- ship the fresh set\n- score it\n"})


VERTEX_TOP = {"modelVersion": "gemini-2.5-pro", "responseId": "xD0VaberBfSanvgPoPLHkAU"}


def vertex_chunk(parts: list[dict[str, Any]], finish: str | None = None, **top: Any) -> bytes:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if finish:
        candidate["finishReason"] = finish
    return sse(
        {"candidates": [candidate], "createTime": "2025-11-13T02:09:08.087479Z", **VERTEX_TOP, **top},
        crlf=True,
    )


def partial_arg(path: str, value: str, more: bool) -> bytes:
    arg: dict[str, Any] = {"jsonPath": path, "stringValue": value}
    if more:
        arg["willContinue"] = True
    return vertex_chunk([{"functionCall": {"partialArgs": [arg], "willContinue": True}}])


def ollama_line(message: dict[str, Any], done: bool = False, **extra: Any) -> bytes:
    body: dict[str, Any] = {"model": "qwen3", "created_at": "2026-03-01T10:00:00.000000Z"}
    body["message"] = {"role": "assistant", "content": "", **message}
    return line({**body, "done": done, **extra})


def converse_ev(name: str, **body: Any) -> bytes:
    return converse_event(name, body)


CONVERSE_META: Final = {
    "usage": {"inputTokens": 30, "outputTokens": 40, "totalTokens": 70},
    "metrics": {"latencyMs": 812},
}


def custom_tool_cut_events(r: Responses) -> tuple[Step, ...]:
    item = {"id": "ctc_1fr35h", "type": "custom_tool_call", "status": "in_progress", "call_id": "call_c2"}
    return stream(
        *r.opening(),
        r.ev("response.output_item.added", output_index=0, item={**item, "input": "", "name": "apply_patch"}),
        r.ev(
            "response.custom_tool_call_input.delta",
            item_id="ctc_1fr35h",
            output_index=0,
            delta="*** Begin Patch\n*** Update File: src/app.py\n@@\n-print('hi')\n+print('hel",
        ),
        r.ev(
            "response.incomplete",
            response=r.response("incomplete", incomplete_details={"reason": "max_output_tokens"}),
        ),
    )


def parallel_cut_events(r: Responses) -> tuple[Step, ...]:
    a, b = _json({"city": "Paris"}), _json({"city": "London", "days": 3})
    items = [
        {"id": f"fc_{i}fr35c", "type": "function_call", "status": "in_progress", "call_id": f"call_x{i}"}
        for i in range(2)
    ]
    return stream(
        *r.opening(),
        r.ev(
            "response.output_item.added",
            output_index=0,
            item={**items[0], "name": "forecast", "arguments": ""},
        ),
        r.ev(
            "response.output_item.added",
            output_index=1,
            item={**items[1], "name": "forecast", "arguments": ""},
        ),
        r.ev("response.function_call_arguments.delta", item_id=items[0]["id"], output_index=0, delta=a),
        r.ev("response.function_call_arguments.delta", item_id=items[1]["id"], output_index=1, delta=b[:14]),
        r.ev("response.function_call_arguments.done", item_id=items[0]["id"], output_index=0, arguments=a),
        r.ev(
            "response.incomplete",
            response=r.response("incomplete", incomplete_details={"reason": "max_output_tokens"}),
        ),
    )


def unterminated(frame: bytes) -> bytes:
    """``frame`` without its closing blank line (its last line still ends)."""
    return frame[:-2] if frame.endswith(b"\r\n\r\n") else frame[:-1]


# sgl-project/sglang PR #11173 (a deepwiki MCP stream from gpt-5); vllm-project/agentic-api PR #139 (the
# mcp_call lifecycle recorded against OpenAI)
_row(
    "tool",
    "openai-responses",
    "hosted-mcp-call-then-text",
    (
        "a hosted MCP call runs on OpenAI's side (list tools, call, output), then text: whole, nothing to "
        "execute"
    ),
    responses_wire(mcp_call_events, "gpt-5"),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# OpenAI Responses streaming reference (response.web_search_call.in_progress/.searching/.completed,
# response.output_text.annotation.added with a url_citation)
_row(
    "stream",
    "openai-responses",
    "web-search-then-cited-text",
    (
        "built-in web search (in_progress, searching, completed) then cited text: a whole answer, no call to "
        "run"
    ),
    responses_wire(web_search_events),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# OpenAI Responses streaming reference (response.code_interpreter_call_code.delta/.done, .interpreting,
# .completed)
_row(
    "tool",
    "openai-responses",
    "code-interpreter-then-text",
    (
        "code interpreter streams its code, interprets, completes; then text: a whole answer, nothing to "
        "execute"
    ),
    responses_wire(code_interpreter_events),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# OpenAI image generation tool guide, streaming (response.image_generation_call.partial_image)
_row(
    "stream",
    "openai-responses",
    "image-generation-partial-images",
    ("image generation streams partial images and completes: a completed response, never a failure"),
    responses_wire(image_generation_events),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# maximhq/bifrost PR #2648 (the shell tool's shell_call item); openai-python's ResponseFunctionShellToolCall
# and response.shell_call_command.added/.delta/.done
_row(
    "tool",
    "openai-responses",
    "shell-call-completes-the-turn",
    (
        "the shell tool's call streams its commands and completes: the turn ended asking the client to run "
        "them"
    ),
    responses_wire(shell_call_events),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# UKGovernmentBEIS/inspect_ai PR #2791 (citing OpenAI's apply_patch guide); langchain-ai/langchain PR #37157
_row(
    "tool",
    "openai-responses",
    "apply-patch-call-completes-the-turn",
    (
        "the apply_patch tool's call (an update_file operation) completes the turn: whole, for the client to "
        "apply"
    ),
    responses_wire(apply_patch_events),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# vllm-project/vllm PR #31761 (reasoning events in a Responses stream); OpenAI reasoning summaries
# (response.reasoning_summary_part.added, reasoning_summary_text.delta/.done)
_row(
    "tool",
    "openai-responses",
    "reasoning-summary-then-call",
    ("a reasoning item (summary, encrypted content) then a function call: one callable call, a whole turn"),
    responses_wire(reasoning_then_call_events),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Claude docs, web search tool, streaming
_row(
    "stream",
    "anthropic",
    "web-search-then-citations",
    (
        "server-side web search (server_tool_use, web_search_tool_result) then text with a citations_delta: "
        "whole"
    ),
    stream(
        a_start("claude-sonnet-4-6"),
        a_block(0, {"type": "server_tool_use", "id": "srvtoolu_01Fr35h", "name": "web_search", "input": {}}),
        a_json(0, '{"query": "claude shannon '),
        a_json(0, 'birth date"}'),
        a_stop_block(0),
        a_block(
            1,
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_01Fr35h",
                "content": [
                    {
                        "type": "web_search_result",
                        "title": "Claude Shannon - Wikipedia",
                        "url": "https://en.wikipedia.org/wiki/Claude_Shannon",
                        "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
                        "page_age": "April 30, 2025",
                    }
                ],
            },
        ),
        a_stop_block(1),
        a_block(2, {"type": "text", "text": "", "citations": []}),
        a_delta(
            2,
            {
                "type": "citations_delta",
                "citation": {
                    "type": "web_search_result_location",
                    "cited_text": "Claude Elwood Shannon (April 30, 1916 – February 24, 2001)",
                    "url": "https://en.wikipedia.org/wiki/Claude_Shannon",
                    "title": "Claude Shannon - Wikipedia",
                    "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
                },
            },
        ),
        a_text(2, "Claude Shannon was born on April 30, 1916."),
        a_stop_block(2),
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 510, "server_tool_use": {"web_search_requests": 1}},
            },
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Claude docs, code execution tool (bash_code_execution and bash_code_execution_tool_result)
_row(
    "tool",
    "anthropic",
    "bash-code-execution-result",
    (
        "server-side code execution (bash_code_execution and its result block) then text: whole, nothing to "
        "run"
    ),
    stream(
        a_start("claude-opus-4-5"),
        a_block(
            0,
            {"type": "server_tool_use", "id": "srvtoolu_02Fr35h", "name": "bash_code_execution", "input": {}},
        ),
        a_json(0, '{"command": "python3 -c \\"print(sum(range(101)))\\""}'),
        a_stop_block(0),
        a_block(
            1,
            {
                "type": "bash_code_execution_tool_result",
                "tool_use_id": "srvtoolu_02Fr35h",
                "content": {
                    "type": "bash_code_execution_result",
                    "stdout": "5050\n",
                    "stderr": "",
                    "return_code": 0,
                },
            },
        ),
        a_stop_block(1),
        a_block(2, {"type": "text", "text": ""}),
        a_text(2, "The sum of 1 to 100 is 5050."),
        a_stop_block(2),
        *a_end("end_turn", 120),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Claude docs, MCP connector (mcp_tool_use, mcp_tool_result)
_row(
    "tool",
    "anthropic",
    "mcp-call-and-result",
    (
        "the MCP connector's mcp_tool_use and mcp_tool_result run on Anthropic's side; then text: whole, 0 "
        "calls"
    ),
    stream(
        a_start("claude-sonnet-4-5-20250929"),
        a_block(
            0,
            {
                "type": "mcp_tool_use",
                "id": "mcptoolu_01Fr35h",
                "name": "echo",
                "server_name": "example-mcp",
                "input": {},
            },
        ),
        a_json(0, '{"message": "hello"}'),
        a_stop_block(0),
        a_block(
            1,
            {
                "type": "mcp_tool_result",
                "tool_use_id": "mcptoolu_01Fr35h",
                "is_error": False,
                "content": [{"type": "text", "text": "hello"}],
            },
        ),
        a_stop_block(1),
        a_block(2, {"type": "text", "text": ""}),
        a_text(2, "The MCP server echoed: hello"),
        a_stop_block(2),
        *a_end("end_turn", 60),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Claude docs, extended thinking (thinking_delta, signature_delta, redacted_thinking blocks)
_row(
    "stream",
    "anthropic",
    "thinking-signature-and-redacted-thinking",
    ("extended thinking (thinking_delta, signature_delta) and a redacted_thinking block, then text: whole"),
    stream(
        a_start("claude-sonnet-4-5-20250929"),
        a_block(0, {"type": "thinking", "thinking": "", "signature": ""}),
        a_delta(0, {"type": "thinking_delta", "thinking": "Let me work out 27 * 453 step by step."}),
        a_delta(
            0,
            {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
        ),
        a_stop_block(0),
        a_block(
            1,
            {
                "type": "redacted_thinking",
                "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
            },
        ),
        a_stop_block(1),
        a_block(2, {"type": "text", "text": ""}),
        a_text(2, "27 * 453 = 12,231."),
        a_stop_block(2),
        *a_end("end_turn", 310),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Claude docs, fine-grained tool streaming (input JSON streamed without buffering, in chunks that do not
# follow JSON boundaries)
_row(
    "tool",
    "anthropic",
    "tool-input-in-unaligned-pieces",
    (
        "fine-grained tool streaming sends input_json_delta in small unaligned pieces; complete at tool_use: "
        "1 call"
    ),
    stream(
        a_start("claude-sonnet-4-5-20250929"),
        a_block(0, {"type": "tool_use", "id": "toolu_01Fr35hGrain", "name": "write_file", "input": {}}),
        *(a_json(0, FILE_ARGS[i : i + 5]) for i in range(0, len(FILE_ARGS), 5)),
        a_stop_block(0),
        *a_end("tool_use", 90),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Gemini docs, thought signatures (the first functionCall part of parallel calls carries the signature)
_row(
    "tool",
    "gemini",
    "parallel-calls-with-thought-signature",
    (
        "two function calls in one chunk, the first carrying a thoughtSignature, then a trailing empty STOP: "
        "2 calls"
    ),
    stream(
        g_chunk(
            [
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": "CiQB0e2Kb7",
                },
                {"functionCall": {"name": "get_weather", "args": {"city": "London"}}},
            ]
        ),
        g_chunk([{"text": ""}], "STOP", usageMetadata=G_USAGE),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# envoyproxy/ai-gateway PR #2399 (raw GCP chunks quoted: the call with a thought signature, then a trailing
# {"text": ""} STOP)
_row(
    "tool",
    "gemini",
    "call-chunk-then-trailing-stop",
    ("newer Gemini models send the call in one chunk and STOP in a trailing empty one: one call, whole"),
    stream(
        g_chunk(
            [
                {
                    "functionCall": {"name": "get_current_weather", "args": {"location": "Boston"}},
                    "thoughtSignature": "EjQK",
                }
            ],
            usageMetadata={"trafficType": "ON_DEMAND"},
        ),
        g_chunk(
            [{"text": ""}],
            "STOP",
            usageMetadata={"promptTokenCount": 107, "candidatesTokenCount": 31, "totalTokenCount": 286},
        ),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Ollama docs, streaming
_row(
    "tool",
    "ollama",
    "thinking-then-tool-call",
    (
        "Ollama's /api/chat streams thinking, then a whole tool call (arguments as an object), then done: 1 "
        "call"
    ),
    ndjson_lines(
        ollama_line({"thinking": "The user wants the weather; "}),
        ollama_line({"thinking": "call get_weather."}),
        ollama_line({"tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}),
        ollama_line(
            {}, True, done_reason="stop", total_duration=912_000_000, prompt_eval_count=42, eval_count=25
        ),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# Ollama docs, tool calling (parallel tool calls in one message)
_row(
    "tool",
    "ollama",
    "parallel-calls-in-one-line",
    ("Ollama's /api/chat returns parallel tool calls in one line's tool_calls array, then done: two calls"),
    ndjson_lines(
        ollama_line(
            {
                "tool_calls": [
                    {"function": {"name": "get_temperature", "arguments": {"city": "New York"}}},
                    {"function": {"name": "get_conditions", "arguments": {"city": "New York"}}},
                ]
            }
        ),
        ollama_line(
            {}, True, done_reason="stop", total_duration=1_204_000_000, prompt_eval_count=61, eval_count=38
        ),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# AWS Bedrock API reference, ConverseStream ReasoningContentBlockDelta (text, signature)
_row(
    "stream",
    "bedrock-converse",
    "reasoning-then-text",
    ("ConverseStream reasoningContent (text, then its signature), then text, end_turn: a whole answer"),
    ndjson_lines(
        converse_ev("messageStart", role="assistant"),
        converse_ev(
            "contentBlockDelta",
            contentBlockIndex=0,
            delta={"reasoningContent": {"text": "Two trains meet when"}},
        ),
        converse_ev(
            "contentBlockDelta",
            contentBlockIndex=0,
            delta={"reasoningContent": {"signature": "ErcBCkgIAxAC"}},
        ),
        converse_ev("contentBlockStop", contentBlockIndex=0),
        converse_ev("contentBlockDelta", contentBlockIndex=1, delta={"text": "They meet after 2 hours."}),
        converse_ev("contentBlockStop", contentBlockIndex=1),
        converse_ev("messageStop", stopReason="end_turn"),
        converse_ev("metadata", **CONVERSE_META),
        head=BEDROCK,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# AWS Bedrock user guide, tool use with ConverseStream (the top_song / WZPZ example)
_row(
    "tool",
    "bedrock-converse",
    "tool-use-input-in-deltas",
    ("ConverseStream text, then a toolUse whose input arrives in deltas, stopReason tool_use: one call"),
    ndjson_lines(
        converse_ev("messageStart", role="assistant"),
        converse_ev("contentBlockDelta", contentBlockIndex=0, delta={"text": "Let me look that up."}),
        converse_ev("contentBlockStop", contentBlockIndex=0),
        converse_ev(
            "contentBlockStart",
            contentBlockIndex=1,
            start={"toolUse": {"toolUseId": "tooluse_Fr35hQ", "name": "top_song"}},
        ),
        converse_ev("contentBlockDelta", contentBlockIndex=1, delta={"toolUse": {"input": '{"sign"'}}),
        converse_ev("contentBlockDelta", contentBlockIndex=1, delta={"toolUse": {"input": ': "WZPZ"}'}}),
        converse_ev("contentBlockStop", contentBlockIndex=1),
        converse_ev("messageStop", stopReason="tool_use"),
        converse_ev("metadata", **CONVERSE_META),
        head=BEDROCK,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# AWS Bedrock API reference, ConverseStream CitationsDelta
_row(
    "stream",
    "bedrock-converse",
    "citations-beside-text",
    ("ConverseStream citation deltas beside text (document citations): a whole answer"),
    ndjson_lines(
        converse_ev("messageStart", role="assistant"),
        converse_ev(
            "contentBlockDelta", contentBlockIndex=0, delta={"text": "The warranty lasts two years."}
        ),
        converse_ev(
            "contentBlockDelta",
            contentBlockIndex=0,
            delta={
                "citation": {
                    "title": "warranty.pdf",
                    "sourceContent": [{"text": "Coverage: 24 months from purchase."}],
                    "location": {"documentPage": {"documentIndex": 0, "start": 2, "end": 2}},
                }
            },
        ),
        converse_ev("contentBlockStop", contentBlockIndex=0),
        converse_ev("messageStop", stopReason="end_turn"),
        converse_ev("metadata", **CONVERSE_META),
        head=BEDROCK,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE, None),
)

# OpenAI streaming reference: response.custom_tool_call_input.delta/.done (as quoted in Soju06/codex-lb
# PR #1889), and response.incomplete with max_output_tokens
_row(
    "tool",
    "openai-responses",
    "custom-tool-input-cut-at-the-limit",
    (
        "a freeform apply_patch input streams, then response.incomplete (max_output_tokens) before its done "
        "event: the patch is cut, never callable"
    ),
    responses_wire(custom_tool_cut_events),
    (
        _C.TOOL_INPUT_INTERRUPTED,
        _V.NO_RETRY,
        _T.TOOL_INPUT_UNFINISHED,
        _P.TOOL_INPUT,
        "length",
        _A.FIX_REQUEST,
        None,
    ),
)

# googleapis/js-genai's streamFunctionCallArguments recording (Vertex, gemini-2.5-pro), cut after a
# willContinue fragment
_row(
    "tool",
    "gemini",
    "streamed-call-arguments-end-mid-call",
    (
        "streamed function-call arguments stop while willContinue is still true (no finish, the body ends): "
        "the call is incomplete, never callable"
    ),
    stream(
        vertex_chunk(
            [
                {
                    "functionCall": {"name": "getCurrentWeather", "willContinue": True},
                    "thoughtSignature": "CmAB4/H/Xj",
                }
            ]
        ),
        partial_arg("$.country", "USA", True),
        partial_arg("$.country", "", False),
        partial_arg("$.location", "NewYork", True),
    ),
    (
        _C.TOOL_INPUT_INTERRUPTED,
        _V.SAFE_AUTO_RETRY,
        _T.EOF_WITHOUT_TERMINAL,
        _P.TOOL_INPUT,
        "eof_without_terminal",
        _A.RETRY,
        None,
    ),
)

# openai/openai-python PR #3247 (custom deltas) with finish_reason: "length"
_row(
    "tool",
    "openai-chat",
    "custom-tool-input-cut-at-length",
    (
        "a Chat custom tool's raw input is cut by finish_reason 'length' ('DELETE FROM sessions WHERE '): "
        "never callable"
    ),
    stream(
        chat({"role": "assistant", "content": None}, model="gpt-5"),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_cu2",
                        "type": "custom",
                        "custom": {"name": "run_sql", "input": ""},
                    }
                ]
            },
            model="gpt-5",
        ),
        chat(
            {"tool_calls": [{"index": 0, "custom": {"input": "DELETE FROM sessions WHERE "}}]}, model="gpt-5"
        ),
        chat({}, "length", model="gpt-5"),
        DONE,
    ),
    (
        _C.TOOL_INPUT_INTERRUPTED,
        _V.NO_RETRY,
        _T.TOOL_INPUT_UNFINISHED,
        _P.TOOL_INPUT,
        "length",
        _A.FIX_REQUEST,
        None,
    ),
)

# AWS Bedrock API reference, ConverseStream stopReason: max_tokens
_row(
    "tool",
    "bedrock-converse",
    "tool-use-cut-at-max-tokens",
    ("ConverseStream stopReason max_tokens while a toolUse input streams: the input is cut, never callable"),
    ndjson_lines(
        converse_ev("messageStart", role="assistant"),
        converse_ev(
            "contentBlockStart",
            contentBlockIndex=0,
            start={"toolUse": {"toolUseId": "tooluse_Fr35hX", "name": "write_file"}},
        ),
        converse_ev(
            "contentBlockDelta",
            contentBlockIndex=0,
            delta={"toolUse": {"input": '{"path": "a.md", "content": "#'}},
        ),
        converse_ev("contentBlockStop", contentBlockIndex=0),
        converse_ev("messageStop", stopReason="max_tokens"),
        converse_ev("metadata", **CONVERSE_META),
        head=BEDROCK,
    ),
    (
        _C.TOOL_INPUT_INTERRUPTED,
        _V.NO_RETRY,
        _T.TOOL_INPUT_UNFINISHED,
        _P.TOOL_INPUT,
        "length",
        _A.FIX_REQUEST,
        None,
    ),
)

# mcowger/plexus#691 and PR #694; iii-hq/workers PR #1020 (parallel calls' deltas interleave), with
# response.incomplete
_row(
    "tool",
    "openai-responses",
    "parallel-second-call-cut-at-the-limit",
    (
        "two interleaved calls; the first's arguments are done, the second's are cut by response.incomplete: "
        "at most the complete one, never the cut one"
    ),
    responses_wire(parallel_cut_events),
    (
        _C.TOOL_INPUT_INTERRUPTED,
        _V.NO_RETRY,
        _T.TOOL_INPUT_UNFINISHED,
        _P.TOOL_INPUT,
        "length",
        _A.FIX_REQUEST,
        None,
    ),
)

# continuedev/continue#12795 (2026-06; also #11715, #9528)
_row(
    "error",
    "ollama",
    "http-500-needs-more-memory",
    ("Ollama cannot load the model (needs more memory than the machine has), HTTP 500: retrying cannot help"),
    http_error(500, {"error": "model requires more system memory (7.5 GiB) than is available (5.2 GiB)"}),
    (
        _C.PROVIDER_ERROR,
        _V.NO_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "model_unavailable",
        _A.FIX_REQUEST,
        None,
    ),
)

# google-gemini/gemini-cli#20309 (2026-02); vertesia/llumiverse PR #467 (2026-06: Gemini/Vertex 499
# cancellations are retryable provider failures)
_row(
    "error",
    "gemini",
    "http-499-cancelled-in-array",
    (
        "Google's 499 CANCELLED (a backend cancelled the operation under load), wrapped in an array: "
        "transient, nothing was delivered, safe to retry"
    ),
    http_error(
        499,
        [
            {
                "error": {
                    "code": 499,
                    "message": "The operation was cancelled.",
                    "errors": [
                        {
                            "message": "The operation was cancelled.",
                            "domain": "global",
                            "reason": "backendError",
                        }
                    ],
                    "status": "CANCELLED",
                }
            }
        ],
    ),
    (
        _C.PROVIDER_ERROR,
        _V.SAFE_AUTO_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "server_error",
        _A.RETRY_AFTER_BACKOFF,
        None,
    ),
)

# meta-llama/llama-models#354 (2025-05)
_row(
    "error",
    "openai-chat",
    "http-429-problem-detail-wait-a-bit",
    (
        "Meta's Llama API answers a token rate limit with a problem object ({title, detail, status}): a rate "
        "limit"
    ),
    http_error(
        429,
        {
            "title": "Too Many Requests",
            "detail": "You have exceeded the maximum number of tokens allowed within a given time frame. Wait a bit"
            " and try again.",
            "status": 429,
        },
    ),
    (
        _C.PROVIDER_ERROR,
        _V.SAFE_AUTO_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "rate_limit",
        _A.RETRY_AFTER_BACKOFF,
        None,
    ),
)

# Gitlawb/openclaude#1549 (2026-06)
_row(
    "error",
    "openai-chat",
    "http-429-free-models-per-day",
    ("OpenRouter's per-day free-model cap at 429: it resets at midnight UTC, not within a retry's wait"),
    http_error(
        429,
        {
            "error": {
                "message": "Rate limit exceeded: free-models-per-day-high-balance.",
                "type": "rate_limit_error",
                "code": "429",
            }
        },
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "quota_exhausted", _A.STOP, None),
)

# Ivy-Interactive/Ivy-Tendril#1756 (2026-07); minorun365/agent-book#29 (2026-01)
_row(
    "error",
    "bedrock-converse",
    "http-429-tokens-per-day",
    ("Bedrock's ThrottlingException 'Too many tokens per day': the daily token quota, no automatic retry"),
    http_error(
        429,
        {"message": "Too many tokens per day, please wait before trying again."},
        headers=(
            ("x-amzn-errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
        ),
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "quota_exhausted", _A.STOP, None),
)

# text-generation-inference's streamed error shape {"error": "<string>", "error_type": "generation"} with
# "Request failed during generation: Server error: CUDA out of memory", as quoted in public client tests;
# openai-python's _streaming.py reads an error that is not an object ("An error
# occurred during streaming")
_row(
    "content",
    "openai-chat",
    "error-string-after-output",
    (
        "TGI's in-stream error, whose 'error' is a plain string (with error_type 'generation'), after visible"
        " text: a failure mid-answer, not whole"
    ),
    stream(
        *chat_text("Here are the three steps:", " first,", model="tgi"),
        sse(
            {
                "error": "Request failed during generation: Server error: CUDA out of memory",
                "error_type": "generation",
            }
        ),
    ),
    (
        _C.PROVIDER_ERROR,
        _V.NO_RETRY,
        _T.PROVIDER_ERROR_EVENT,
        _P.MID_GENERATION,
        "model_unavailable",
        _A.FIX_REQUEST,
        None,
    ),
)

# diegosouzapw/OmniRoute PR #8210 (2026-07: OpenRouter, nvidia/nemotron-3-ultra-550b-a55b:free, HTTP 200)
_row(
    "content",
    "openai-chat",
    "in-band-error-with-empty-choices",
    (
        "OpenRouter at HTTP 200: a chunk with empty choices and a top-level error (the upstream worker is at "
        "its request limit) before any output: a failure, transient, safe to retry"
    ),
    stream(
        sse(
            {
                "id": "gen-1784907787-Fr35h",
                "object": "chat.completion.chunk",
                "created": 1784907787,
                "model": "nvidia/nemotron-3-ultra-550b-a55b:free",
                "provider": "Nvidia",
                "choices": [],
                "error": {"code": 502, "message": "Worker local total request limit reached (33/32)"},
            }
        ),
        DONE,
    ),
    (
        _C.PROVIDER_ERROR,
        _V.SAFE_AUTO_RETRY,
        _T.PROVIDER_ERROR_EVENT,
        _P.EARLY_STREAM,
        "server_error",
        _A.RETRY_AFTER_BACKOFF,
        None,
    ),
)

# letta-ai/letta PR #3304 (2026-04)
_row(
    "error",
    "openai-chat",
    "http-429-detail-wraps-insufficient-balance",
    (
        "a gateway's 429 says 'rate limit', its detail string wraps the upstream's 'Insufficient balance ... "
        "Please recharge': money, not a wait"
    ),
    http_error(
        429,
        {
            "message": "Rate limit exceeded for LLM model provider. Please wait before making another request.",
            "detail": "RATE_LIMIT_EXCEEDED: Rate limited by OpenAI: Error code: 429 - {'error': {'code': '1113',"
            " 'message': 'Insufficient balance or no resource package. Please recharge.'}} [BYOK]",
        },
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "quota_exhausted", _A.STOP, None),
)

# michelle-avery/custom-conversation PR #26 (2025-04)
_row(
    "error",
    "gemini",
    "http-429-per-day-quota-in-array",
    ("a per-day request quota (quotaId ...PerDay..., 25 a day) in an array-wrapped 429: no automatic retry"),
    http_error(
        429,
        [
            {
                "error": {
                    "code": 429,
                    "message": "You exceeded your current quota, please check your plan and billing details. For"
                    " more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
                    "status": "RESOURCE_EXHAUSTED",
                    "details": [
                        {
                            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                            "violations": [
                                {
                                    "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                                    "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                                    "quotaDimensions": {"location": "global", "model": "gemini-2.5-pro-exp"},
                                    "quotaValue": "25",
                                }
                            ],
                        }
                    ],
                }
            }
        ],
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "quota_exhausted", _A.STOP, None),
)

# QuantumNous/new-api PR #6310 (2026-07): the distributor answers "no available channel" with HTTP 503 and
# code: model_not_found; QuantumNous/new-api#982 (the wording)
_row(
    "error",
    "openai-chat",
    "http-503-model-not-found-code",
    (
        "new-api's distributor: no channel serves the model in this group, code model_not_found, sent as 503:"
        " the model is not offered here; retrying the same route cannot help"
    ),
    http_error(
        503,
        {
            "error": {
                "message": "当前分组 default 下对于模型 gpt-5.2 无可用渠道 (request id: 20260719101500123456789)",
                "type": "new_api_error",
                "code": "model_not_found",
            }
        },
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "not_found", _A.FIX_REQUEST, None),
)

# microsoft/TinyTroupe#85 (2025-01)
_row(
    "error",
    "openai-chat",
    "http-400-content-filter-innererror",
    ("Azure's prompt filter (jailbreak detected) at 400, code content_filter: a content-policy rejection"),
    http_error(
        400,
        {
            "error": {
                "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management"
                " policy. Please modify your prompt and retry. To learn more about our content filtering policies"
                " please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
                "type": None,
                "param": "prompt",
                "code": "content_filter",
                "status": 400,
                "innererror": {
                    "code": "ResponsibleAIPolicyViolation",
                    "content_filter_result": {
                        "hate": {"filtered": False, "severity": "safe"},
                        "jailbreak": {"filtered": True, "detected": True},
                        "self_harm": {"filtered": False, "severity": "safe"},
                        "sexual": {"filtered": False, "severity": "safe"},
                        "violence": {"filtered": False, "severity": "safe"},
                    },
                },
            }
        },
    ),
    (
        _C.PROVIDER_ERROR,
        _V.NO_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "content_filter",
        _A.FIX_REQUEST,
        None,
    ),
)

# daydreamsai/daydreams#1 (2025-01)
_row(
    "error",
    "anthropic",
    "http-429-input-tokens-per-minute",
    ("a per-minute input-token limit at 429: a rate limit that clears within the minute, safe to retry"),
    http_error(
        429,
        {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": "This request would exceed your organization’s rate limit of 50,000 input tokens per"
                " minute. For details, refer to: https://docs.anthropic.com/en/api/rate-limits; see the response"
                " headers for current usage. Please reduce the prompt length or the maximum tokens requested, or"
                " try again later.",
            },
        },
    ),
    (
        _C.PROVIDER_ERROR,
        _V.SAFE_AUTO_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "rate_limit",
        _A.RETRY_AFTER_BACKOFF,
        None,
    ),
)

# google-gemini/gemini-cli#16205 (2026-01)
_row(
    "error",
    "gemini",
    "http-429-daily-quota-exhausted",
    (
        "'You have exhausted your daily quota on this model' (RESOURCE_EXHAUSTED): a day's quota, no "
        "automatic retry"
    ),
    http_error(
        429,
        {
            "error": {
                "code": 429,
                "message": "You have exhausted your daily quota on this model.",
                "status": "RESOURCE_EXHAUSTED",
            }
        },
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "quota_exhausted", _A.STOP, None),
)

# AWS Bedrock API reference, ConverseStream output members (serviceUnavailableException), as quoted in
# crewAIInc/crewAI PR #7417
_row(
    "error",
    "bedrock-converse",
    "service-unavailable-before-output",
    (
        "a serviceUnavailableException message in the ConverseStream before any output: transient, safe to "
        "retry"
    ),
    ndjson_lines(
        converse_ev("messageStart", role="assistant"),
        exception_message(
            "The service isn't currently available. Try again later.", "serviceUnavailableException"
        ),
        head=BEDROCK,
    ),
    (
        _C.PROVIDER_ERROR,
        _V.SAFE_AUTO_RETRY,
        _T.PROVIDER_ERROR_EVENT,
        _P.EARLY_STREAM,
        "overloaded",
        _A.RETRY_AFTER_BACKOFF,
        None,
    ),
)

# MoonshotAI/kimi-cli#1002 (2026-02)
_row(
    "error",
    "openai-chat",
    "http-400-high-risk-content-filter",
    ("Moonshot rejects the prompt as high risk (type content_filter) at 400: a content-policy rejection"),
    http_error(
        400,
        {
            "error": {
                "code": 400,
                "message": "The request was rejected because it was considered high risk",
                "param": "prompt",
                "type": "content_filter",
            }
        },
    ),
    (
        _C.PROVIDER_ERROR,
        _V.NO_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "content_filter",
        _A.FIX_REQUEST,
        None,
    ),
)

# clacky-ai/openclacky#192 (2026-05)
_row(
    "error",
    "openai-chat",
    "http-403-access-terminated",
    ("the account's access was terminated (403 access_terminated_error): no retry can help"),
    http_error(
        403,
        {
            "error": {
                "message": "Access terminated. Review our Community Guidelines"
                " (https://www.kimi.com/code/docs/kimi-code/community-guidelines.html) or contact"
                " support@moonshot.cn for assistance.",
                "type": "access_terminated_error",
            }
        },
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "permission", _A.FIX_REQUEST, None),
)

# turnstonelabs/turnstone#1162 and PR #1164 (2026-09); anthropics/anthropic-sdk-go#295
_row(
    "finish",
    "anthropic",
    "finish-model-context-window-exceeded",
    (
        "stop_reason 'model_context_window_exceeded': the answer stopped where the window ended: cut, not "
        "whole"
    ),
    stream(
        a_start("claude-sonnet-4-5-20250929"),
        a_block(0, {"type": "text", "text": ""}),
        a_text(0, "Continuing the summary of chapter 12:"),
        a_stop_block(0),
        *a_end("model_context_window_exceeded", 2048),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "length", _A.NONE, None),
)

# earendil-works/pi PR #1868 (2026-03); openclaw/openclaw PR #63796
_row(
    "finish",
    "openai-chat",
    "finish-model-context-window-exceeded",
    (
        "ZhipuAI GLM's chat finish_reason 'model_context_window_exceeded': cut by the window, not a whole "
        "answer"
    ),
    stream(
        *chat_text("第一部分的分析如下：", "市场规模在", model="glm-4.7"),
        chat({}, "model_context_window_exceeded", model="glm-4.7"),
        DONE,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "length", _A.NONE, None),
)

# anomalyco/opencode PR #46193; agentjido/req_llm PR #1033; UKGovernmentBEIS/inspect_ai#2941
_row(
    "finish",
    "bedrock-converse",
    "finish-model-context-window-exceeded",
    ("ConverseStream stopReason model_context_window_exceeded: cut by the context window, not whole"),
    ndjson_lines(
        converse_ev("messageStart", role="assistant"),
        converse_ev(
            "contentBlockDelta", contentBlockIndex=0, delta={"text": "The log shows repeated timeouts in"}
        ),
        converse_ev("contentBlockStop", contentBlockIndex=0),
        converse_ev("messageStop", stopReason="model_context_window_exceeded"),
        converse_ev("metadata", **CONVERSE_META),
        head=BEDROCK,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "length", _A.NONE, None),
)

# anomalyco/opencode PR #46193; agentjido/req_llm PR #1033; UKGovernmentBEIS/inspect_ai#2941
_row(
    "finish",
    "bedrock-converse",
    "finish-malformed-model-output",
    ("ConverseStream stopReason malformed_model_output: the output could not be parsed: not a whole answer"),
    ndjson_lines(
        converse_ev("messageStart", role="assistant"),
        converse_ev("contentBlockDelta", contentBlockIndex=0, delta={"text": "<|channel|>analysis"}),
        converse_ev("contentBlockStop", contentBlockIndex=0),
        converse_ev("messageStop", stopReason="malformed_model_output"),
        converse_ev("metadata", **CONVERSE_META),
        head=BEDROCK,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "malformed_tool_call", _A.NONE, None),
)

# danny-avila/LibreChat PR #15647 (2026-09: the ConverseStream events quoted); langchain4j/langchain4j#3854
_row(
    "finish",
    "bedrock-converse",
    "finish-content-filtered-after-text",
    ("ConverseStream stopReason content_filtered after partial text (Nova's content filter): a filter stop"),
    ndjson_lines(
        converse_ev("messageStart", role="assistant"),
        converse_ev("contentBlockDelta", contentBlockIndex=0, delta={"text": "The instructions for that"}),
        converse_ev("contentBlockStop", contentBlockIndex=0),
        converse_ev("messageStop", stopReason="content_filtered"),
        converse_ev(
            "metadata",
            usage={"inputTokens": 10, "outputTokens": 2, "totalTokens": 12},
            metrics={"latencyMs": 301},
        ),
        head=BEDROCK,
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "content_filter", _A.NONE, None),
)

# google-genai FinishReason (the installed SDK's types; Gemini API reference)
_row(
    "finish",
    "gemini",
    "finish-prohibited-content-after-text",
    ("finishReason PROHIBITED_CONTENT after some text: the answer was stopped for prohibited content"),
    stream(
        g_chunk([{"text": "Here is a summary of the leaked"}]),
        g_chunk([], "PROHIBITED_CONTENT", usageMetadata=G_USAGE),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "content_filter", _A.NONE, None),
)

# google-genai FinishReason (the installed SDK's types; Gemini API reference)
_row(
    "finish",
    "gemini",
    "finish-spii",
    ("finishReason SPII (sensitive personally identifiable information) after some text: a filter stop"),
    stream(
        g_chunk([{"text": "The account holder's details are: name"}]),
        g_chunk([], "SPII", usageMetadata=G_USAGE),
    ),
    (_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "content_filter", _A.NONE, None),
)


# xtekky/gpt4free#3456 (2026-06)
_row(
    "error",
    "openai-chat",
    "http-500-token-limit-per-day-exceeded",
    ("a per-day token limit sent as HTTP 500: not transient, no automatic retry within a minute"),
    http_error(
        500,
        {
            "error": {
                "message": "Token limit (500,000 per day) exceeded. Used: 508,311 tokens. Sign up at"
                " g4f.dev/members.html for higher limits."
            }
        },
    ),
    (_C.PROVIDER_ERROR, _V.NO_RETRY, _T.HTTP_ERROR, _P.BEFORE_CONNECTION, "quota_exhausted", _A.STOP, None),
)

# popjane/free_chatgpt_api#110 (2025-10, "for days"); songquanpeng/one-api#2340
_row(
    "error",
    "openai-chat",
    "http-503-no-channel-in-group",
    (
        "one-api/new-api gateways: 'no available channel for model gpt-4o-mini in group default' at 503: a "
        "routing fact about the model, not a transient overload"
    ),
    http_error(
        503,
        {
            "error": {
                "message": "当前分组 default 下对于模型 gpt-4o-mini 无可用渠道 (request id: 202510161555437244439317690388)",
                "type": "v_api_error",
            }
        },
    ),
    (
        _C.PROVIDER_ERROR,
        _V.NO_RETRY,
        _T.HTTP_ERROR,
        _P.BEFORE_CONNECTION,
        "model_unavailable",
        _A.FIX_REQUEST,
        None,
    ),
)

# ollama/ollama#14093 (2026-02); continuedev/continue#10984
_row(
    "content",
    "ollama",
    "error-line-runner-stopped-after-output",
    ("Ollama's runner dies mid-answer and the stream carries an error line after text: a failure, not whole"),
    ndjson_lines(
        ollama_line({"content": "The first step is to"}),
        ollama_line({"content": " open the"}),
        line(
            {
                "error": "model runner has unexpectedly stopped, this may be due to resource limitations or an"
                " internal error, check ollama server logs for details"
            }
        ),
    ),
    (
        _C.PROVIDER_ERROR,
        _V.USER_CONFIRMED_RETRY,
        _T.PROVIDER_ERROR_EVENT,
        _P.MID_GENERATION,
        "unknown",
        _A.CONTINUE_WITH_PARTIAL,
        None,
    ),
)

# the WHATWG server-sent events rule (an event still pending when the stream ends is discarded);
# anomalyco/opencode#40454
_row(
    "stream",
    "openai-chat",
    "text-then-torn-chunk",
    (
        "the last data line is cut mid-JSON and the body ends cleanly: a partial event is never dispatched; "
        "the answer is not whole"
    ),
    stream(
        *chat_text("Step one: open the", model="gpt-4.1-mini"),
        chat({"content": " settings"}, model="gpt-4.1-mini")[:60],
    ),
    (
        _C.MID_GENERATION,
        _V.USER_CONFIRMED_RETRY,
        _T.EOF_WITHOUT_TERMINAL,
        _P.MID_GENERATION,
        "eof_without_terminal",
        _A.CONTINUE_WITH_PARTIAL,
        None,
    ),
)
