"""The fresh held-out set of issue 33: current API features as the providers document them, error wordings,
vendors' finish reasons and SSE ends of stream, as data.

Each `Shape` is one response a provider, gateway or local server sends (its source is cited per id in
``SOURCES.md`` beside this file), the format the library reads it as, and what a careful engineer would say
the truth is (`Expect`), decided from first principles, not from what the code does today. Where a source
gives only part of a wire, the rest is the provider's documented envelope (SOURCES.md says so per row).

Groups: ``feature`` (current API features played as documented), ``error`` (an error's words say more than
its status), ``finish`` (vendors' finish reasons; malformed or unexpected calls), ``sse`` (ends of an event
stream). A shape whose expectation is ``whole=True`` is a clean success: a false alarm there is as wrong as
a miss elsewhere.

The predicates are those of the issue-29 set (``tests/heldout``), plus three the issue names: ``freeform``
(a custom tool's input is the text its done event gave, not JSON), ``finish`` (the record's unified finish
reason) and ``output_tokens`` (usage read wherever the provider put it). One truth holds for every shape and
the scorer always checks it: no callable ``ToolCall`` whose input is incomplete by its kind's own grammar.
"""

# The wire text of Chinese gateways is kept as sent (full-width punctuation included), and wire strings and
# the one-line truths are kept whole, one per line.
# ruff: noqa: RUF001, E501

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from streamfsm.testing import Step
from streamfsm.testing._realworld import (
    ADD_ARGS,
    BEDROCK,
    CONVERSE_META,
    DONE,
    FILE_ARGS,
    G_USAGE,
    WEATHER_ARGS,
    a_block,
    a_delta,
    a_end,
    a_json,
    a_start,
    a_stop_block,
    a_text,
    apply_patch_events,
    chat,
    chat_text,
    code_interpreter_events,
    compaction_events,
    converse_ev,
    custom_tool_cut_events,
    custom_tool_events,
    g_chunk,
    http_error,
    image_generation_events,
    mcp_approval_events,
    mcp_call_events,
    message_events,
    ndjson_lines,
    ollama_line,
    parallel_call_events,
    parallel_cut_events,
    partial_arg,
    reasoning_then_call_events,
    responses_wire,
    shell_call_events,
    sse,
    stream,
    unterminated,
    vertex_chunk,
    web_search_events,
)
from streamfsm.testing._wire import line
from streamfsm.wire import exception_message

__all__ = ["GROUPS", "SHAPES", "Expect", "Shape"]

NOT_SAFE: Final = frozenset({"no_retry", "user_confirmed_retry"})
NO_RETRY: Final = frozenset({"no_retry"})
SAFE: Final = frozenset({"safe_auto_retry"})

GROUPS: Final = ("feature", "error", "finish", "sse")


@dataclass(frozen=True)
class Expect:
    """What must hold for the run. None (False for ``not_auto_soon``) means "not checked".

    * ``whole``: called a whole answer (``summary_key == "completed.finished"``) or not.
    * ``failed``: reported as a failure (class not ``completed``) or not.
    * ``verdicts``: the retry verdict is one of these.
    * ``kind``: the provider error kind.
    * ``tool_calls``: exactly this many callable ``ToolCall`` events (server-side calls are not callable);
      ``max_tool_calls``: at most this many; ``tool_names``: their names in order.
    * ``text``: visible answer text was delivered or not.
    * ``not_auto_soon``: no automatic retry within the default policy's longest provider wait (60 s).
    * ``retry_after``: the stated wait is read, within (low, high) seconds.
    * ``freeform``: (tool name, input) of custom tools: a call of that name must carry exactly that input
      (the done event's text); every other call's input must parse as JSON.
    * ``finish``: the record's ``finish_reason.unified``.
    * ``output_tokens``: the record's output token count.
    """

    whole: bool | None = None
    failed: bool | None = None
    verdicts: frozenset[str] | None = None
    kind: str | None = None
    tool_calls: int | None = None
    max_tool_calls: int | None = None
    tool_names: tuple[str, ...] | None = None
    text: bool | None = None
    not_auto_soon: bool = False
    retry_after: tuple[float, float] | None = None
    freeform: tuple[tuple[str, str], ...] = ()
    finish: str | None = None
    output_tokens: int | None = None

    @property
    def clean(self) -> bool:
        return self.whole is True


@dataclass(frozen=True)
class Shape:
    id: str
    root: str  # the group (``root`` so the issue-29 scorer groups it the same way)
    format: str
    script: tuple[Step, ...]
    expect: Expect
    why: str
    tags: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.root not in GROUPS:
            raise ValueError(f"{self.id}: unknown group {self.root!r}")


_S: list[Shape] = []


def shape(id: str, group: str, fmt: str, script: tuple[Step, ...], expect: Expect, why: str) -> None:
    _S.append(Shape(id, group, fmt, script, expect, why))


# The wire builders are the catalog's (streamfsm/testing/_realworld.py), where this set's shapes became
# catalog scenarios.


# Feature: OpenAI Responses ------------------------------------------------------------------------------


shape(
    "responses-custom-tool-freeform-input",
    "feature",
    "openai-responses",
    responses_wire(custom_tool_events, "gpt-5-nano"),
    Expect(whole=True, tool_calls=1, tool_names=("shell",), freeform=(("shell", "echo hello"),)),
    "a custom (freeform) tool's input is raw text ('echo hello'), complete at its done event: one callable call",
)


shape(
    "responses-parallel-calls-interleaved",
    "feature",
    "openai-responses",
    responses_wire(parallel_call_events),
    Expect(whole=True, tool_calls=3, tool_names=("add_task", "add_task", "add_task")),
    "three parallel function calls whose argument deltas interleave (keyed by item_id/output_index): 3 calls",
)


shape(
    "responses-hosted-mcp-call-then-text",
    "feature",
    "openai-responses",
    responses_wire(mcp_call_events, "gpt-5"),
    Expect(whole=True, text=True, tool_calls=0),
    "a hosted MCP call runs on OpenAI's side (list tools, call, output), then text: whole, nothing to execute",
)


shape(
    "responses-mcp-approval-request",
    "feature",
    "openai-responses",
    responses_wire(mcp_approval_events),
    Expect(failed=False, tool_calls=0),
    "the response completes asking the user to approve a hosted MCP call: not a failure, and not a call the"
    " agent executes (the approval goes back in the next request)",
)


shape(
    "responses-web-search-with-citation",
    "feature",
    "openai-responses",
    responses_wire(web_search_events),
    Expect(whole=True, text=True, tool_calls=0),
    "built-in web search (in_progress, searching, completed) then cited text: a whole answer, no call to run",
)


shape(
    "responses-code-interpreter-then-text",
    "feature",
    "openai-responses",
    responses_wire(code_interpreter_events),
    Expect(whole=True, text=True, tool_calls=0),
    "code interpreter streams its code, interprets, completes; then text: a whole answer, nothing to execute",
)


shape(
    "responses-image-generation-partial-images",
    "feature",
    "openai-responses",
    responses_wire(image_generation_events),
    Expect(failed=False, tool_calls=0),
    "image generation streams partial images and completes: a completed response, never a failure",
)


shape(
    "responses-shell-tool-call",
    "feature",
    "openai-responses",
    responses_wire(shell_call_events),
    Expect(whole=True, failed=False),
    "the shell tool's call streams its commands and completes: the turn ended asking the client to run them",
)


shape(
    "responses-apply-patch-call",
    "feature",
    "openai-responses",
    responses_wire(apply_patch_events),
    Expect(whole=True, failed=False),
    "the apply_patch tool's call (an update_file operation) completes the turn: whole, for the client to apply",
)


shape(
    "responses-compaction-item-then-text",
    "feature",
    "openai-responses",
    responses_wire(compaction_events),
    Expect(whole=True, text=True, tool_calls=0),
    "a compaction item (encrypted, opaque) precedes the answer: housekeeping, the answer is whole",
)


shape(
    "responses-reasoning-summary-then-call",
    "feature",
    "openai-responses",
    responses_wire(reasoning_then_call_events),
    Expect(whole=True, tool_calls=1, tool_names=("get_weather",)),
    "a reasoning item (summary, encrypted content) then a function call: one callable call, a whole turn",
)

# Feature: Chat Completions -------------------------------------------------------------------------------

shape(
    "chat-custom-tool-call-delta",
    "feature",
    "openai-chat",
    stream(
        chat({"role": "assistant", "content": None}, model="gpt-5"),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_cu1",
                        "type": "custom",
                        "custom": {"name": "run_sql", "input": ""},
                    }
                ]
            },
            model="gpt-5",
        ),
        chat({"tool_calls": [{"index": 0, "custom": {"input": "SELECT name FROM users"}}]}, model="gpt-5"),
        chat({"tool_calls": [{"index": 0, "custom": {"input": " WHERE id = 7"}}]}, model="gpt-5"),
        chat({}, "tool_calls", model="gpt-5"),
        DONE,
    ),
    Expect(
        whole=True,
        tool_calls=1,
        tool_names=("run_sql",),
        freeform=(("run_sql", "SELECT name FROM users WHERE id = 7"),),
    ),
    "a Chat custom tool call streams raw text input under 'custom' (not 'function'): one call, text input",
)

shape(
    "chat-parallel-calls-interleaved-indices",
    "feature",
    "openai-chat",
    stream(
        chat({"role": "assistant", "content": None}, model="gpt-5.1"),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_p0",
                        "type": "function",
                        "function": {"name": "add_numbers", "arguments": ""},
                    }
                ]
            },
            model="gpt-5.1",
        ),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_p1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            },
            model="gpt-5.1",
        ),
        chat({"tool_calls": [{"index": 0, "function": {"arguments": ADD_ARGS[:6]}}]}, model="gpt-5.1"),
        chat({"tool_calls": [{"index": 1, "function": {"arguments": WEATHER_ARGS[:12]}}]}, model="gpt-5.1"),
        chat({"tool_calls": [{"index": 0, "function": {"arguments": ADD_ARGS[6:]}}]}, model="gpt-5.1"),
        chat({"tool_calls": [{"index": 1, "function": {"arguments": WEATHER_ARGS[12:]}}]}, model="gpt-5.1"),
        chat({}, "tool_calls", model="gpt-5.1"),
        DONE,
    ),
    Expect(whole=True, tool_calls=2, tool_names=("add_numbers", "get_weather")),
    "two calls whose argument deltas interleave by index (0, 1, 0, 1): two calls, each with its own JSON",
)

shape(
    "chat-usage-inside-choice",
    "feature",
    "openai-chat",
    stream(
        *chat_text(
            "你好", "！有什么可以帮你？", model="moonshot-v1-8k", cid="chatcmpl-67500eb0c51af667d5968f74"
        ),
        chat(
            {},
            "stop",
            model="moonshot-v1-8k",
            cid="chatcmpl-67500eb0c51af667d5968f74",
            choice_extra={"usage": {"prompt_tokens": 10, "completion_tokens": 79, "total_tokens": 89}},
            system_fingerprint="fpv0_c26222aa",
        ),
        DONE,
    ),
    Expect(whole=True, text=True, output_tokens=79),
    "Moonshot/Kimi put usage inside the final choice, not at the top level: a whole answer, 79 tokens out",
)

# Feature: Anthropic ----------------------------------------------------------------------------------------

shape(
    "anthropic-web-search-citations",
    "feature",
    "anthropic",
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
    Expect(whole=True, text=True, tool_calls=0),
    "server-side web search (server_tool_use, web_search_tool_result) then text with a citations_delta: whole",
)

shape(
    "anthropic-code-execution-bash-result",
    "feature",
    "anthropic",
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
    Expect(whole=True, text=True, tool_calls=0),
    "server-side code execution (bash_code_execution and its result block) then text: whole, nothing to run",
)

shape(
    "anthropic-mcp-tool-use-and-result",
    "feature",
    "anthropic",
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
    Expect(whole=True, text=True, tool_calls=0),
    "the MCP connector's mcp_tool_use and mcp_tool_result run on Anthropic's side; then text: whole, 0 calls",
)

shape(
    "anthropic-thinking-signature-redacted",
    "feature",
    "anthropic",
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
    Expect(whole=True, text=True),
    "extended thinking (thinking_delta, signature_delta) and a redacted_thinking block, then text: whole",
)

shape(
    "anthropic-fine-grained-tool-streaming",
    "feature",
    "anthropic",
    stream(
        a_start("claude-sonnet-4-5-20250929"),
        a_block(0, {"type": "tool_use", "id": "toolu_01Fr35hGrain", "name": "write_file", "input": {}}),
        *(a_json(0, FILE_ARGS[i : i + 5]) for i in range(0, len(FILE_ARGS), 5)),
        a_stop_block(0),
        *a_end("tool_use", 90),
    ),
    Expect(whole=True, tool_calls=1, tool_names=("write_file",)),
    "fine-grained tool streaming sends input_json_delta in small unaligned pieces; complete at tool_use: 1 call",
)

# Feature: Gemini ------------------------------------------------------------------------------------------


shape(
    "gemini-streamed-function-call-arguments",
    "feature",
    "gemini",
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
        partial_arg("$.location", "NewYorkCity", True),
        partial_arg("$.location", "", False),
        partial_arg("$.purpose", "to know what to wear today", True),
        partial_arg("$.purpose", "", False),
        partial_arg("$.unit", "C", True),
        partial_arg("$.unit", "", False),
        vertex_chunk(
            [{"functionCall": {}}],
            "STOP",
            usageMetadata={"candidatesTokenCount": 29, "promptTokenCount": 36, "totalTokenCount": 258},
        ),
    ),
    Expect(whole=True, tool_calls=1, tool_names=("getCurrentWeather",)),
    "Vertex streams one call's arguments as partialArgs fragments (willContinue), ended by an empty"
    " functionCall: one call, getCurrentWeather, with complete JSON",
)

shape(
    "gemini-parallel-calls-with-thought-signature",
    "feature",
    "gemini",
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
    Expect(whole=True, tool_calls=2, tool_names=("get_weather", "get_weather")),
    "two function calls in one chunk, the first carrying a thoughtSignature, then a trailing empty STOP: 2 calls",
)

shape(
    "gemini-code-execution-parts",
    "feature",
    "gemini",
    stream(
        g_chunk([{"text": "I'll compute it."}]),
        g_chunk([{"executableCode": {"language": "PYTHON", "code": "print(sum(i*i for i in range(11)))"}}]),
        g_chunk([{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "385\n"}}]),
        g_chunk([{"text": " The sum of squares 0..10 is 385."}], "STOP", usageMetadata=G_USAGE),
    ),
    Expect(whole=True, text=True, tool_calls=0),
    "code execution parts (executableCode, codeExecutionResult) between text parts: a whole answer",
)

shape(
    "gemini-call-chunk-then-trailing-stop",
    "feature",
    "gemini",
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
    Expect(whole=True, tool_calls=1, tool_names=("get_current_weather",)),
    "newer Gemini models send the call in one chunk and STOP in a trailing empty one: one call, whole",
)

# Feature: Ollama (native NDJSON) ------------------------------------------------------------------------


shape(
    "ollama-native-thinking-then-tool-call",
    "feature",
    "ollama",
    ndjson_lines(
        ollama_line({"thinking": "The user wants the weather; "}),
        ollama_line({"thinking": "call get_weather."}),
        ollama_line({"tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}),
        ollama_line(
            {}, True, done_reason="stop", total_duration=912_000_000, prompt_eval_count=42, eval_count=25
        ),
    ),
    Expect(whole=True, tool_calls=1, tool_names=("get_weather",)),
    "Ollama's /api/chat streams thinking, then a whole tool call (arguments as an object), then done: 1 call",
)

shape(
    "ollama-native-parallel-tool-calls",
    "feature",
    "ollama",
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
    Expect(whole=True, tool_calls=2, tool_names=("get_temperature", "get_conditions")),
    "Ollama's /api/chat returns parallel tool calls in one line's tool_calls array, then done: two calls",
)

# Feature: Bedrock ConverseStream ------------------------------------------------------------------------


shape(
    "bedrock-converse-reasoning-then-text",
    "feature",
    "bedrock-converse",
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
    Expect(whole=True, text=True),
    "ConverseStream reasoningContent (text, then its signature), then text, end_turn: a whole answer",
)

shape(
    "bedrock-converse-tool-use-deltas",
    "feature",
    "bedrock-converse",
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
    Expect(whole=True, text=True, tool_calls=1, tool_names=("top_song",)),
    "ConverseStream text, then a toolUse whose input arrives in deltas, stopReason tool_use: one call",
)

shape(
    "bedrock-converse-citations",
    "feature",
    "bedrock-converse",
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
    Expect(whole=True, text=True),
    "ConverseStream citation deltas beside text (document citations): a whole answer",
)

# Feature faults: the same features, cut or stopped where a call is not complete ---------------------------


shape(
    "responses-custom-tool-input-cut-incomplete",
    "feature",
    "openai-responses",
    responses_wire(custom_tool_cut_events),
    Expect(whole=False, tool_calls=0),
    "a freeform apply_patch input streams, then response.incomplete (max_output_tokens) before its done event:"
    " the patch is cut, never callable",
)

shape(
    "gemini-partial-args-end-mid-call",
    "feature",
    "gemini",
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
    Expect(whole=False, tool_calls=0),
    "streamed function-call arguments stop while willContinue is still true (no finish, the body ends):"
    " the call is incomplete, never callable",
)

shape(
    "chat-custom-tool-input-cut-at-length",
    "feature",
    "openai-chat",
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
    Expect(whole=False, tool_calls=0, finish="length"),
    "a Chat custom tool's raw input is cut by finish_reason 'length' ('DELETE FROM sessions WHERE '): never"
    " callable",
)

shape(
    "bedrock-tool-use-cut-at-max-tokens",
    "feature",
    "bedrock-converse",
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
    Expect(whole=False, tool_calls=0, finish="length"),
    "ConverseStream stopReason max_tokens while a toolUse input streams: the input is cut, never callable",
)


shape(
    "responses-parallel-second-call-cut",
    "feature",
    "openai-responses",
    responses_wire(parallel_cut_events),
    Expect(whole=False, max_tool_calls=1),
    "two interleaved calls; the first's arguments are done, the second's are cut by response.incomplete: at"
    " most the complete one, never the cut one",
)

# Errors: the words say more than the status -----------------------------------------------------------------

shape(
    "g4f-tokens-per-day-at-500",
    "error",
    "openai-chat",
    http_error(
        500,
        {
            "error": {
                "message": "Token limit (500,000 per day) exceeded. Used: 508,311 tokens. Sign up at"
                " g4f.dev/members.html for higher limits."
            }
        },
    ),
    Expect(failed=True, not_auto_soon=True, text=False),
    "a per-day token limit sent as HTTP 500: not transient, no automatic retry within a minute",
)

shape(
    "oneapi-no-available-channel-503",
    "error",
    "openai-chat",
    http_error(
        503,
        {
            "error": {
                "message": "当前分组 default 下对于模型 gpt-4o-mini 无可用渠道 (request id: 202510161555437244439317690388)",
                "type": "v_api_error",
            }
        },
    ),
    Expect(failed=True, not_auto_soon=True),
    "one-api/new-api gateways: 'no available channel for model gpt-4o-mini in group default' at 503: a routing"
    " fact about the model, not a transient overload",
)

shape(
    "ollama-model-needs-more-memory-500",
    "error",
    "ollama",
    http_error(500, {"error": "model requires more system memory (7.5 GiB) than is available (5.2 GiB)"}),
    Expect(failed=True, not_auto_soon=True),
    "Ollama cannot load the model (needs more memory than the machine has), HTTP 500: retrying cannot help",
)

shape(
    "gemini-499-cancelled-in-array",
    "error",
    "gemini",
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
    Expect(failed=True, verdicts=SAFE, text=False),
    "Google's 499 CANCELLED (a backend cancelled the operation under load), wrapped in an array: transient,"
    " nothing was delivered, safe to retry",
)

shape(
    "gemini-per-minute-quota-retry-delay",
    "error",
    "gemini",
    http_error(
        429,
        {
            "error": {
                "code": 429,
                "message": "You exceeded your current quota, please check your plan and billing details. For more"
                " information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [
                            {
                                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
                                "quotaId": "GenerateContentInputTokensPerModelPerMinute-FreeTier",
                                "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
                                "quotaValue": "250000",
                            }
                        ],
                    },
                    {
                        "@type": "type.googleapis.com/google.rpc.Help",
                        "links": [
                            {
                                "description": "Learn more",
                                "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                            }
                        ],
                    },
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "26s"},
                ],
            }
        },
    ),
    Expect(failed=True, kind="rate_limit", verdicts=SAFE, retry_after=(20.0, 30.0)),
    "a per-minute input-token quota (quotaId ...PerMinute..., RetryInfo 26s) whose words say 'quota' and"
    " 'billing': a rate limit that clears in 26 s, not an exhausted quota",
)

shape(
    "llama-api-problem-detail-429",
    "error",
    "openai-chat",
    http_error(
        429,
        {
            "title": "Too Many Requests",
            "detail": "You have exceeded the maximum number of tokens allowed within a given time frame. Wait a bit"
            " and try again.",
            "status": 429,
        },
    ),
    Expect(failed=True, kind="rate_limit", verdicts=SAFE),
    "Meta's Llama API answers a token rate limit with a problem object ({title, detail, status}): a rate limit",
)

shape(
    "openrouter-free-models-per-day-429",
    "error",
    "openai-chat",
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
    Expect(failed=True, not_auto_soon=True),
    "OpenRouter's per-day free-model cap at 429: it resets at midnight UTC, not within a retry's wait",
)

shape(
    "bedrock-tokens-per-day-throttling",
    "error",
    "bedrock-converse",
    http_error(
        429,
        {"message": "Too many tokens per day, please wait before trying again."},
        headers=(
            ("x-amzn-errortype", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
        ),
    ),
    Expect(failed=True, not_auto_soon=True),
    "Bedrock's ThrottlingException 'Too many tokens per day': the daily token quota, no automatic retry",
)

shape(
    "tgi-in-band-error-string-mid-stream",
    "error",
    "openai-chat",
    stream(
        *chat_text("Here are the three steps:", " first,", model="tgi"),
        sse(
            {
                "error": "Request failed during generation: Server error: CUDA out of memory",
                "error_type": "generation",
            }
        ),
    ),
    Expect(whole=False, failed=True, verdicts=NOT_SAFE, text=True),
    "TGI's in-stream error, whose 'error' is a plain string (with error_type 'generation'), after visible text:"
    " a failure mid-answer, not whole",
)

shape(
    "openrouter-in-band-error-empty-choices",
    "error",
    "openai-chat",
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
    Expect(failed=True, verdicts=SAFE, text=False),
    "OpenRouter at HTTP 200: a chunk with empty choices and a top-level error (the upstream worker is at its"
    " request limit) before any output: a failure, transient, safe to retry",
)

shape(
    "letta-detail-wraps-insufficient-balance",
    "error",
    "openai-chat",
    http_error(
        429,
        {
            "message": "Rate limit exceeded for LLM model provider. Please wait before making another request.",
            "detail": "RATE_LIMIT_EXCEEDED: Rate limited by OpenAI: Error code: 429 - {'error': {'code': '1113',"
            " 'message': 'Insufficient balance or no resource package. Please recharge.'}} [BYOK]",
        },
    ),
    Expect(failed=True, not_auto_soon=True, kind="quota_exhausted"),
    "a gateway's 429 says 'rate limit', its detail string wraps the upstream's 'Insufficient balance ... Please"
    " recharge': money, not a wait",
)

shape(
    "gemini-per-day-quota-in-array",
    "error",
    "gemini",
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
    Expect(failed=True, not_auto_soon=True),
    "a per-day request quota (quotaId ...PerDay..., 25 a day) in an array-wrapped 429: no automatic retry",
)

shape(
    "newapi-model-not-found-503",
    "error",
    "openai-chat",
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
    Expect(failed=True, not_auto_soon=True),
    "new-api's distributor: no channel serves the model in this group, code model_not_found, sent as 503: the"
    " model is not offered here; retrying the same route cannot help",
)

shape(
    "azure-content-filter-400-innererror",
    "error",
    "openai-chat",
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
    Expect(failed=True, kind="content_filter", verdicts=NO_RETRY),
    "Azure's prompt filter (jailbreak detected) at 400, code content_filter: a content-policy rejection",
)

shape(
    "anthropic-input-tokens-per-minute-429",
    "error",
    "anthropic",
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
    Expect(failed=True, kind="rate_limit", verdicts=SAFE),
    "a per-minute input-token limit at 429: a rate limit that clears within the minute, safe to retry",
)

shape(
    "gemini-daily-quota-exhausted",
    "error",
    "gemini",
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
    Expect(failed=True, not_auto_soon=True),
    "'You have exhausted your daily quota on this model' (RESOURCE_EXHAUSTED): a day's quota, no automatic retry",
)

shape(
    "bedrock-service-unavailable-in-stream",
    "error",
    "bedrock-converse",
    ndjson_lines(
        converse_ev("messageStart", role="assistant"),
        exception_message(
            "The service isn't currently available. Try again later.", "serviceUnavailableException"
        ),
        head=BEDROCK,
    ),
    Expect(failed=True, verdicts=SAFE, text=False),
    "a serviceUnavailableException message in the ConverseStream before any output: transient, safe to retry",
)

shape(
    "ollama-runner-stopped-mid-stream",
    "error",
    "ollama",
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
    Expect(whole=False, failed=True, verdicts=NOT_SAFE, text=True),
    "Ollama's runner dies mid-answer and the stream carries an error line after text: a failure, not whole",
)

shape(
    "deepseek-content-exists-risk-400",
    "error",
    "openai-chat",
    http_error(
        400,
        {
            "error": {
                "message": "Content Exists Risk",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
        },
    ),
    Expect(failed=True, kind="content_filter", verdicts=NO_RETRY),
    "DeepSeek's 'Content Exists Risk' typed invalid_request_error: its content-safety rejection, whatever the type",
)

shape(
    "moonshot-high-risk-content-filter-400",
    "error",
    "openai-chat",
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
    Expect(failed=True, kind="content_filter", verdicts=NO_RETRY),
    "Moonshot rejects the prompt as high risk (type content_filter) at 400: a content-policy rejection",
)

shape(
    "moonshot-access-terminated-403",
    "error",
    "openai-chat",
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
    Expect(failed=True, verdicts=NO_RETRY),
    "the account's access was terminated (403 access_terminated_error): no retry can help",
)

# Finish reasons under vendors' names; unexpected and malformed calls ----------------------------------------

shape(
    "anthropic-model-context-window-exceeded",
    "finish",
    "anthropic",
    stream(
        a_start("claude-sonnet-4-5-20250929"),
        a_block(0, {"type": "text", "text": ""}),
        a_text(0, "Continuing the summary of chapter 12:"),
        a_stop_block(0),
        *a_end("model_context_window_exceeded", 2048),
    ),
    Expect(whole=False, verdicts=NOT_SAFE, text=True, finish="length"),
    "stop_reason 'model_context_window_exceeded': the answer stopped where the window ended: cut, not whole",
)

shape(
    "glm-chat-model-context-window-exceeded",
    "finish",
    "openai-chat",
    stream(
        *chat_text("第一部分的分析如下：", "市场规模在", model="glm-4.7"),
        chat({}, "model_context_window_exceeded", model="glm-4.7"),
        DONE,
    ),
    Expect(whole=False, verdicts=NOT_SAFE, text=True, finish="length"),
    "ZhipuAI GLM's chat finish_reason 'model_context_window_exceeded': cut by the window, not a whole answer",
)

shape(
    "gemini-unexpected-tool-call-with-call",
    "finish",
    "gemini",
    stream(
        g_chunk(
            [{"functionCall": {"name": "undeclaredTool", "args": {"arg1": "value1", "arg2": "value2"}}}],
            "UNEXPECTED_TOOL_CALL",
            usageMetadata=G_USAGE,
        ),
    ),
    Expect(whole=False, tool_calls=0),
    "finishReason UNEXPECTED_TOOL_CALL carrying a functionCall to an undeclared tool: no call is callable",
)

shape(
    "gemini-too-many-tool-calls",
    "finish",
    "gemini",
    stream(
        g_chunk([{"text": "Searching the catalogue again"}]),
        g_chunk([], "TOO_MANY_TOOL_CALLS", usageMetadata=G_USAGE),
    ),
    Expect(whole=False, verdicts=NOT_SAFE, text=True),
    "finishReason TOO_MANY_TOOL_CALLS: the system stopped the model's tool loop: not a whole answer",
)

shape(
    "bedrock-malformed-tool-use-with-call",
    "finish",
    "bedrock-converse",
    ndjson_lines(
        converse_ev("messageStart", role="assistant"),
        converse_ev(
            "contentBlockStart",
            contentBlockIndex=0,
            start={"toolUse": {"toolUseId": "tooluse_Fr35hM", "name": "create_ticket"}},
        ),
        converse_ev(
            "contentBlockDelta", contentBlockIndex=0, delta={"toolUse": {"input": '{"title": "Login fails"}'}}
        ),
        converse_ev("contentBlockStop", contentBlockIndex=0),
        converse_ev("messageStop", stopReason="malformed_tool_use"),
        converse_ev("metadata", **CONVERSE_META),
        head=BEDROCK,
    ),
    Expect(whole=False, tool_calls=0),
    "stopReason malformed_tool_use after a toolUse block: the model's call is malformed: never callable",
)

shape(
    "bedrock-model-context-window-exceeded",
    "finish",
    "bedrock-converse",
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
    Expect(whole=False, verdicts=NOT_SAFE, text=True, finish="length"),
    "ConverseStream stopReason model_context_window_exceeded: cut by the context window, not whole",
)

shape(
    "bedrock-malformed-model-output",
    "finish",
    "bedrock-converse",
    ndjson_lines(
        converse_ev("messageStart", role="assistant"),
        converse_ev("contentBlockDelta", contentBlockIndex=0, delta={"text": "<|channel|>analysis"}),
        converse_ev("contentBlockStop", contentBlockIndex=0),
        converse_ev("messageStop", stopReason="malformed_model_output"),
        converse_ev("metadata", **CONVERSE_META),
        head=BEDROCK,
    ),
    Expect(whole=False, text=True),
    "ConverseStream stopReason malformed_model_output: the output could not be parsed: not a whole answer",
)

shape(
    "bedrock-content-filtered-after-text",
    "finish",
    "bedrock-converse",
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
    Expect(whole=False, verdicts=NO_RETRY, text=True, finish="content_filter"),
    "ConverseStream stopReason content_filtered after partial text (Nova's content filter): a filter stop",
)

shape(
    "gemini-prohibited-content-mid-text",
    "finish",
    "gemini",
    stream(
        g_chunk([{"text": "Here is a summary of the leaked"}]),
        g_chunk([], "PROHIBITED_CONTENT", usageMetadata=G_USAGE),
    ),
    Expect(whole=False, verdicts=NO_RETRY, text=True, finish="content_filter"),
    "finishReason PROHIBITED_CONTENT after some text: the answer was stopped for prohibited content",
)

shape(
    "gemini-spii-finish",
    "finish",
    "gemini",
    stream(
        g_chunk([{"text": "The account holder's details are: name"}]),
        g_chunk([], "SPII", usageMetadata=G_USAGE),
    ),
    Expect(whole=False, verdicts=NO_RETRY, text=True, finish="content_filter"),
    "finishReason SPII (sensitive personally identifiable information) after some text: a filter stop",
)

# SSE ends of stream ----------------------------------------------------------------------------------------


shape(
    "gemini-last-event-without-blank-line",
    "sse",
    "gemini",
    stream(
        g_chunk([{"text": "The capital of Australia"}]),
        unterminated(g_chunk([{"text": " is Canberra."}], "STOP", usageMetadata=G_USAGE)),
    ),
    Expect(whole=True, text=True),
    "the last chunk (with finishReason STOP) ends its data line but the blank line never comes, then a clean"
    " end: google-genai dispatches it; the data is complete: a whole answer",
)

shape(
    "responses-completed-without-blank-line",
    "sse",
    "openai-responses",
    responses_wire(
        lambda r: stream(
            *r.opening(),
            *message_events(r, 0, "Done: ", "the file is saved."),
            unterminated(r.ev("response.completed", response=r.response("completed"))),
        )
    ),
    Expect(whole=True, text=True),
    "response.completed whose blank line never came (a proxy trimmed it), then a clean end: openai-node now"
    " dispatches it; the terminal event is complete: whole",
)

shape(
    "anthropic-message-stop-without-blank-line",
    "sse",
    "anthropic",
    stream(
        a_start("claude-haiku-4-5"),
        a_block(0, {"type": "text", "text": ""}),
        a_text(0, "Paris is the capital of France."),
        a_stop_block(0),
        *(lambda end: [end[0], unterminated(end[1])])(a_end("end_turn", 9)),
    ),
    Expect(whole=True, text=True),
    "message_delta (end_turn) arrived whole; message_stop's blank line never came, then a clean end: whole",
)

shape(
    "chat-finish-chunk-without-blank-line",
    "sse",
    "openai-chat",
    stream(
        *chat_text("Sure, here it is:", " 42.", model="gpt-4.1-mini"),
        unterminated(chat({}, "stop", model="gpt-4.1-mini")),
    ),
    Expect(whole=True, text=True),
    "the chunk carrying finish_reason 'stop' ends its line but not its event, then the body ends (no [DONE]):"
    " openai-node now dispatches it; the finish is complete: whole",
)

shape(
    "chat-partial-last-line",
    "sse",
    "openai-chat",
    stream(
        *chat_text("Step one: open the", model="gpt-4.1-mini"),
        chat({"content": " settings"}, model="gpt-4.1-mini")[:60],
    ),
    Expect(whole=False, failed=True, text=True),
    "the last data line is cut mid-JSON and the body ends cleanly: a partial event is never dispatched; the"
    " answer is not whole",
)

SHAPES: Final = tuple(_S)
if len({s.id for s in SHAPES}) != len(SHAPES):
    raise ValueError("duplicate shape ids")
