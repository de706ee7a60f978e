"""Real-world wire shapes as catalog scenarios: issue 29's held-out set (``tests/heldout``), taken after its
after-score. Each row is one response a provider, gateway or local server was seen to send, with its public
source in a comment (the full citation is in ``tests/heldout/SOURCES.md`` under the shape's id), the
catalog family it joins, and the outcome the taxonomy gives it, written by hand.

Model output text is shortened or made up where the source's text is irrelevant to the shape. Shapes that
repeat a scenario already in the catalog (same wire, same outcome) are left out here.
"""

# The wire text of Chinese providers is kept as sent (full-width punctuation included).
# ruff: noqa: RUF001

from __future__ import annotations

import json
from typing import Any, Final

from ..classify import Action, FailureClass, Phase, Verdict
from ..machine import Trigger
from ._script import End, Headers, Send, Status, Step

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
