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

from streamfsm.testing import Step, find
from streamfsm.testing._realworld import (
    ADD_ARGS,
    BEDROCK,
    CONVERSE_META,
    DONE,
    G_USAGE,
    WEATHER_ARGS,
    a_block,
    a_end,
    a_start,
    a_stop_block,
    a_text,
    chat,
    chat_text,
    compaction_events,
    converse_ev,
    custom_tool_events,
    g_chunk,
    http_error,
    mcp_approval_events,
    message_events,
    ndjson_lines,
    parallel_call_events,
    partial_arg,
    responses_wire,
    stream,
    unterminated,
    vertex_chunk,
)

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
    """A shape the catalog leaves out (it repeats a catalog scenario's outcome, or main still misses it)."""
    _S.append(Shape(id, group, fmt, script, expect, why))


def catalogued(id: str, group: str, name: str, expect: Expect) -> None:
    """A shape the catalog plays as scenario ``name``: its format, wire and why are the scenario's."""
    scenario = find(name)
    _S.append(Shape(id, group, scenario.format, scenario.script, expect, scenario.description))


# The shapes that became catalog scenarios are read from the catalog (`catalogued`), the others are built
# with the catalog's wire builders (streamfsm/testing/_realworld.py): one copy of each wire.


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


catalogued(
    "responses-hosted-mcp-call-then-text",
    "feature",
    "openai-responses/hosted-mcp-call-then-text",
    Expect(whole=True, text=True, tool_calls=0),
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


catalogued(
    "responses-web-search-with-citation",
    "feature",
    "openai-responses/web-search-then-cited-text",
    Expect(whole=True, text=True, tool_calls=0),
)


catalogued(
    "responses-code-interpreter-then-text",
    "feature",
    "openai-responses/code-interpreter-then-text",
    Expect(whole=True, text=True, tool_calls=0),
)


catalogued(
    "responses-image-generation-partial-images",
    "feature",
    "openai-responses/image-generation-partial-images",
    Expect(failed=False, tool_calls=0),
)


catalogued(
    "responses-shell-tool-call",
    "feature",
    "openai-responses/shell-call-completes-the-turn",
    Expect(whole=True, failed=False),
)


catalogued(
    "responses-apply-patch-call",
    "feature",
    "openai-responses/apply-patch-call-completes-the-turn",
    Expect(whole=True, failed=False),
)


shape(
    "responses-compaction-item-then-text",
    "feature",
    "openai-responses",
    responses_wire(compaction_events),
    Expect(whole=True, text=True, tool_calls=0),
    "a compaction item (encrypted, opaque) precedes the answer: housekeeping, the answer is whole",
)


catalogued(
    "responses-reasoning-summary-then-call",
    "feature",
    "openai-responses/reasoning-summary-then-call",
    Expect(whole=True, tool_calls=1, tool_names=("get_weather",)),
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

catalogued(
    "anthropic-web-search-citations",
    "feature",
    "anthropic/web-search-then-citations",
    Expect(whole=True, text=True, tool_calls=0),
)

catalogued(
    "anthropic-code-execution-bash-result",
    "feature",
    "anthropic/bash-code-execution-result",
    Expect(whole=True, text=True, tool_calls=0),
)

catalogued(
    "anthropic-mcp-tool-use-and-result",
    "feature",
    "anthropic/mcp-call-and-result",
    Expect(whole=True, text=True, tool_calls=0),
)

catalogued(
    "anthropic-thinking-signature-redacted",
    "feature",
    "anthropic/thinking-signature-and-redacted-thinking",
    Expect(whole=True, text=True),
)

catalogued(
    "anthropic-fine-grained-tool-streaming",
    "feature",
    "anthropic/tool-input-in-unaligned-pieces",
    Expect(whole=True, tool_calls=1, tool_names=("write_file",)),
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

catalogued(
    "gemini-parallel-calls-with-thought-signature",
    "feature",
    "gemini/parallel-calls-with-thought-signature",
    Expect(whole=True, tool_calls=2, tool_names=("get_weather", "get_weather")),
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

catalogued(
    "gemini-call-chunk-then-trailing-stop",
    "feature",
    "gemini/call-chunk-then-trailing-stop",
    Expect(whole=True, tool_calls=1, tool_names=("get_current_weather",)),
)

# Feature: Ollama (native NDJSON) ------------------------------------------------------------------------


catalogued(
    "ollama-native-thinking-then-tool-call",
    "feature",
    "ollama/thinking-then-tool-call",
    Expect(whole=True, tool_calls=1, tool_names=("get_weather",)),
)

catalogued(
    "ollama-native-parallel-tool-calls",
    "feature",
    "ollama/parallel-calls-in-one-line",
    Expect(whole=True, tool_calls=2, tool_names=("get_temperature", "get_conditions")),
)

# Feature: Bedrock ConverseStream ------------------------------------------------------------------------


catalogued(
    "bedrock-converse-reasoning-then-text",
    "feature",
    "bedrock-converse/reasoning-then-text",
    Expect(whole=True, text=True),
)

catalogued(
    "bedrock-converse-tool-use-deltas",
    "feature",
    "bedrock-converse/tool-use-input-in-deltas",
    Expect(whole=True, text=True, tool_calls=1, tool_names=("top_song",)),
)

catalogued(
    "bedrock-converse-citations",
    "feature",
    "bedrock-converse/citations-beside-text",
    Expect(whole=True, text=True),
)

# Feature faults: the same features, cut or stopped where a call is not complete ---------------------------


catalogued(
    "responses-custom-tool-input-cut-incomplete",
    "feature",
    "openai-responses/custom-tool-input-cut-at-the-limit",
    Expect(whole=False, tool_calls=0),
)

catalogued(
    "gemini-partial-args-end-mid-call",
    "feature",
    "gemini/streamed-call-arguments-end-mid-call",
    Expect(whole=False, tool_calls=0),
)

catalogued(
    "chat-custom-tool-input-cut-at-length",
    "feature",
    "openai-chat/custom-tool-input-cut-at-length",
    Expect(whole=False, tool_calls=0, finish="length"),
)

catalogued(
    "bedrock-tool-use-cut-at-max-tokens",
    "feature",
    "bedrock-converse/tool-use-cut-at-max-tokens",
    Expect(whole=False, tool_calls=0, finish="length"),
)


catalogued(
    "responses-parallel-second-call-cut",
    "feature",
    "openai-responses/parallel-second-call-cut-at-the-limit",
    Expect(whole=False, max_tool_calls=1),
)

# Errors: the words say more than the status -----------------------------------------------------------------

catalogued(
    "g4f-tokens-per-day-at-500",
    "error",
    "openai-chat/http-500-token-limit-per-day-exceeded",
    Expect(failed=True, not_auto_soon=True, text=False),
)

catalogued(
    "oneapi-no-available-channel-503",
    "error",
    "openai-chat/http-503-no-channel-in-group",
    Expect(failed=True, not_auto_soon=True),
)

catalogued(
    "ollama-model-needs-more-memory-500",
    "error",
    "ollama/http-500-needs-more-memory",
    Expect(failed=True, not_auto_soon=True),
)

catalogued(
    "gemini-499-cancelled-in-array",
    "error",
    "gemini/http-499-cancelled-in-array",
    Expect(failed=True, verdicts=SAFE, text=False),
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

catalogued(
    "llama-api-problem-detail-429",
    "error",
    "openai-chat/http-429-problem-detail-wait-a-bit",
    Expect(failed=True, kind="rate_limit", verdicts=SAFE),
)

catalogued(
    "openrouter-free-models-per-day-429",
    "error",
    "openai-chat/http-429-free-models-per-day",
    Expect(failed=True, not_auto_soon=True),
)

catalogued(
    "bedrock-tokens-per-day-throttling",
    "error",
    "bedrock-converse/http-429-tokens-per-day",
    Expect(failed=True, not_auto_soon=True),
)

catalogued(
    "tgi-in-band-error-string-mid-stream",
    "error",
    "openai-chat/error-string-after-output",
    Expect(whole=False, failed=True, verdicts=NOT_SAFE, text=True),
)

catalogued(
    "openrouter-in-band-error-empty-choices",
    "error",
    "openai-chat/in-band-error-with-empty-choices",
    Expect(failed=True, verdicts=SAFE, text=False),
)

catalogued(
    "letta-detail-wraps-insufficient-balance",
    "error",
    "openai-chat/http-429-detail-wraps-insufficient-balance",
    Expect(failed=True, not_auto_soon=True, kind="quota_exhausted"),
)

catalogued(
    "gemini-per-day-quota-in-array",
    "error",
    "gemini/http-429-per-day-quota-in-array",
    Expect(failed=True, not_auto_soon=True),
)

catalogued(
    "newapi-model-not-found-503",
    "error",
    "openai-chat/http-503-model-not-found-code",
    Expect(failed=True, not_auto_soon=True),
)

catalogued(
    "azure-content-filter-400-innererror",
    "error",
    "openai-chat/http-400-content-filter-innererror",
    Expect(failed=True, kind="content_filter", verdicts=NO_RETRY),
)

catalogued(
    "anthropic-input-tokens-per-minute-429",
    "error",
    "anthropic/http-429-input-tokens-per-minute",
    Expect(failed=True, kind="rate_limit", verdicts=SAFE),
)

catalogued(
    "gemini-daily-quota-exhausted",
    "error",
    "gemini/http-429-daily-quota-exhausted",
    Expect(failed=True, not_auto_soon=True),
)

catalogued(
    "bedrock-service-unavailable-in-stream",
    "error",
    "bedrock-converse/service-unavailable-before-output",
    Expect(failed=True, verdicts=SAFE, text=False),
)

catalogued(
    "ollama-runner-stopped-mid-stream",
    "error",
    "ollama/error-line-runner-stopped-after-output",
    Expect(whole=False, failed=True, verdicts=NOT_SAFE, text=True),
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

catalogued(
    "moonshot-high-risk-content-filter-400",
    "error",
    "openai-chat/http-400-high-risk-content-filter",
    Expect(failed=True, kind="content_filter", verdicts=NO_RETRY),
)

catalogued(
    "moonshot-access-terminated-403",
    "error",
    "openai-chat/http-403-access-terminated",
    Expect(failed=True, verdicts=NO_RETRY),
)

# Finish reasons under vendors' names; unexpected and malformed calls ----------------------------------------

catalogued(
    "anthropic-model-context-window-exceeded",
    "finish",
    "anthropic/finish-model-context-window-exceeded",
    Expect(whole=False, verdicts=NOT_SAFE, text=True, finish="length"),
)

catalogued(
    "glm-chat-model-context-window-exceeded",
    "finish",
    "openai-chat/finish-model-context-window-exceeded",
    Expect(whole=False, verdicts=NOT_SAFE, text=True, finish="length"),
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

catalogued(
    "bedrock-model-context-window-exceeded",
    "finish",
    "bedrock-converse/finish-model-context-window-exceeded",
    Expect(whole=False, verdicts=NOT_SAFE, text=True, finish="length"),
)

catalogued(
    "bedrock-malformed-model-output",
    "finish",
    "bedrock-converse/finish-malformed-model-output",
    Expect(whole=False, text=True),
)

catalogued(
    "bedrock-content-filtered-after-text",
    "finish",
    "bedrock-converse/finish-content-filtered-after-text",
    Expect(whole=False, verdicts=NO_RETRY, text=True, finish="content_filter"),
)

catalogued(
    "gemini-prohibited-content-mid-text",
    "finish",
    "gemini/finish-prohibited-content-after-text",
    Expect(whole=False, verdicts=NO_RETRY, text=True, finish="content_filter"),
)

catalogued(
    "gemini-spii-finish",
    "finish",
    "gemini/finish-spii",
    Expect(whole=False, verdicts=NO_RETRY, text=True, finish="content_filter"),
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

catalogued(
    "chat-partial-last-line",
    "sse",
    "openai-chat/text-then-torn-chunk",
    Expect(whole=False, failed=True, text=True),
)

SHAPES: Final = tuple(_S)
if len({s.id for s in SHAPES}) != len(SHAPES):
    raise ValueError("duplicate shape ids")
