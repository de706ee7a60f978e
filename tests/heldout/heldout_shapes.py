"""The fresh held-out set of issue 29: real-world wire shapes from public bug reports and docs, as data.

Each `Shape` is one response a provider, gateway or local server was seen to send (its source is cited per id
in ``SOURCES.md`` beside this file), the format the library reads it as, and what a careful engineer would
say the truth is (`Expect`), decided from first principles, not from what the code does today.

Expectations are predicates over the run's `Diagnosis`, its events and `run.result()`, written so that new
summary keys (an "unrecognised finish" outcome, say) do not break them: "not called a whole answer", "the
verdict is one of", "the provider error kind is", "at most N tool calls", never an exact summary key unless
the issue names the family. One truth holds for every shape and is always checked by the scorer: no
``ToolCall`` whose arguments do not parse as JSON.

Roots (issue 29): ``finish`` (1, unknown finish reasons), ``tool`` (2, tool-call completeness and identity),
``error`` (3, error kinds by words), ``content`` (4, content shapes the adapter must read), and ``control``
(known-good shapes that must stay right).

This set was held out: the helpers fixing the roots did not see it. After its after-score was taken it became
catalog scenarios (``streamfsm/testing/_realworld.py``, whose wire builders this file uses), except the shapes
the catalog already had and the one shape main still misses; SOURCES.md says which.
"""

# The wire text of Chinese providers is kept as sent (full-width punctuation included).
# ruff: noqa: RUF001

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from streamfsm.testing import Step
from streamfsm.testing._realworld import (
    A_PING,
    DONE,
    G_USAGE,
    Responses,
    a_block,
    a_end,
    a_json,
    a_start,
    a_stop_block,
    a_text,
    chat,
    chat_text,
    g_chunk,
    http_error,
    sse,
    stream,
)

__all__ = ["SHAPES", "Expect", "Shape"]

# Verdict sets. After visible output an automatic retry would show the answer twice: never safe.
NOT_SAFE: Final = frozenset({"no_retry", "user_confirmed_retry"})
NO_RETRY: Final = frozenset({"no_retry"})
SAFE: Final = frozenset({"safe_auto_retry"})

ROOTS: Final = ("finish", "tool", "error", "content", "control")


@dataclass(frozen=True)
class Expect:
    """What must hold for the run. None (or False for ``not_auto_soon``) means "not checked".

    * ``whole``: the run is called a whole answer (``summary_key == "completed.finished"``) or not.
    * ``failed``: the run is reported as a failure (its class is not ``completed``) or not.
    * ``verdicts``: the retry verdict is one of these.
    * ``kind``: the provider error kind (``rate_limit``, ``quota_exhausted``, ...).
    * ``key_prefix``: the summary key starts with this (only where the issue names the family).
    * ``tool_calls``: exactly this many ``ToolCall`` events; ``max_tool_calls``: at most this many.
    * ``tool_names``: the names of the ``ToolCall`` events, in order.
    * ``text``: visible answer text was delivered (non-empty) or not.
    * ``not_auto_soon``: no automatic retry within the default policy's longest provider wait (60 s): the
      verdict is not ``safe_auto_retry``, or the stated retry delay is longer than that.
    """

    whole: bool | None = None
    failed: bool | None = None
    verdicts: frozenset[str] | None = None
    kind: str | None = None
    key_prefix: str | None = None
    tool_calls: int | None = None
    max_tool_calls: int | None = None
    tool_names: tuple[str, ...] | None = None
    text: bool | None = None
    not_auto_soon: bool = False


@dataclass(frozen=True)
class Shape:
    id: str
    root: str
    format: str
    script: tuple[Step, ...]
    expect: Expect
    why: str  # one line: the truth and why
    tags: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.root not in ROOTS:
            raise ValueError(f"{self.id}: unknown root {self.root!r}")


# The wire builders are the catalog's (streamfsm/testing/_realworld.py), where this set's shapes became
# scenarios: one copy, so the held-out wires and the catalog's cannot drift apart.


# -- the set ----------------------------------------------------------------------------------------------

_S: list[Shape] = []


def shape(
    id: str, root: str, fmt: str, script: tuple[Step, ...], expect: Expect, why: str, *tags: str
) -> None:
    _S.append(Shape(id, root, fmt, script, expect, why, tags))


# Root 1: finish reasons nobody enumerated -------------------------------------------------------------------

shape(
    "vllm-engine-abort-finish",
    "finish",
    "openai-chat",
    stream(
        *chat_text("One, two, three,", " four, five,", model="qwen3"),
        chat({}, "abort", model="qwen3"),
        DONE,
    ),
    Expect(whole=False, failed=True, verdicts=NOT_SAFE, text=True),
    "vLLM ends an engine-aborted request with finish_reason 'abort' and [DONE]: an abort, not an answer",
)
shape(
    "zhipu-sensitive-finish",
    "finish",
    "openai-chat",
    stream(
        *chat_text("关于这个问题，", "我们可以从以下几个方面", model="glm-4-plus"),
        chat({"content": ""}, "sensitive", model="glm-4-plus"),
        DONE,
    ),
    Expect(whole=False, verdicts=NOT_SAFE, text=True),
    "Zhipu GLM stops on sensitive content with finish_reason 'sensitive': a filter stop, not a whole answer",
)
shape(
    "deepseek-insufficient-system-resource",
    "finish",
    "openai-chat",
    stream(
        *chat_text("The proof proceeds", " by induction on n.", model="deepseek-chat"),
        chat({"content": ""}, "insufficient_system_resource", model="deepseek-chat"),
        DONE,
    ),
    Expect(whole=False, verdicts=NOT_SAFE, text=True),
    "DeepSeek's documented finish_reason 'insufficient_system_resource': interrupted, not a whole answer",
)
shape(
    "tgi-eos-token-finish",
    "finish",
    "openai-chat",
    stream(
        *chat_text("Hugging Face is a company", " that builds tools for machine learning.", model="tgi"),
        chat({"role": "assistant", "content": ""}, "eos_token", model="tgi"),
        DONE,
    ),
    Expect(whole=True, text=True),
    "TGI's chat endpoint sent finish_reason 'eos_token' for a natural end: a whole answer (known-good set)",
)
shape(
    "anthropic-pause-turn",
    "finish",
    "anthropic",
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
    Expect(whole=False, verdicts=NOT_SAFE, text=True),
    "stop_reason 'pause_turn': a server-tool loop paused mid-turn, the caller must send it back to continue",
)
shape(
    "gemini-finish-other",
    "finish",
    "gemini",
    stream(
        g_chunk([{"text": "Here is the translation of the first"}]),
        g_chunk([{"text": " two paragraphs:"}], "OTHER", usageMetadata=G_USAGE),
    ),
    Expect(whole=False, verdicts=NOT_SAFE, text=True),
    "Gemini FinishReason OTHER ('model stopped for another reason'): not a whole answer",
)
shape(
    "vllm-done-without-finish-reason",
    "finish",
    "openai-chat",
    stream(
        *chat_text("The weather in Warsaw", " is", model="ibm/granite-3-8b-instruct"),
        DONE,
    ),
    Expect(whole=False, text=True),
    "vLLM sometimes ends a chat stream with [DONE] and no finish_reason at all: nothing says it is whole",
)
shape(
    "mistral-model-length-finish",
    "finish",
    "openai-chat",
    stream(
        *chat_text("Chapter 1.", " It was a dark", model="mistral-large-latest"),
        chat({"content": ""}, "model_length", model="mistral-large-latest"),
        DONE,
    ),
    Expect(whole=False, verdicts=NOT_SAFE, text=True),
    "Mistral's finish_reason 'model_length' (the model's context length was reached): cut, not whole",
)

# Root 2: tool calls: complete before callable, one call under two ids, empty-string continuations -----------

_WEATHER = {"type": "function", "function": {"name": "get_current_weather", "arguments": ""}}

shape(
    "vllm-truncated-args-finish-tool-calls",
    "tool",
    "openai-chat",
    stream(
        chat({"role": "assistant", "content": None}, model="Qwen3-0.6B"),
        chat({"tool_calls": [{"index": 0, "id": "chatcmpl-tool-9d1", **_WEATHER}]}, model="Qwen3-0.6B"),
        chat(
            {"tool_calls": [{"index": 0, "function": {"arguments": '{"location": "Ber'}}]}, model="Qwen3-0.6B"
        ),
        chat({}, "tool_calls", model="Qwen3-0.6B"),
        DONE,
    ),
    Expect(whole=False, tool_calls=0),
    "vLLM streaming reports 'tool_calls' for a call cut by max_tokens; its arguments do not parse",
)
shape(
    "chat-length-mid-tool-args",
    "tool",
    "openai-chat",
    stream(
        chat({"role": "assistant", "content": ""}, model="llama-3.1-8b"),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_w1",
                        "type": "function",
                        "function": {"name": "write_file", "arguments": '{"path": "report.md", "cont'},
                    }
                ]
            },
            model="llama-3.1-8b",
        ),
        chat({}, "length", model="llama-3.1-8b"),
        DONE,
    ),
    Expect(whole=False, tool_calls=0, key_prefix="tool_input_interrupted"),
    "finish_reason 'length' while write_file's arguments stream: the call was cut, the tool must not run",
)
shape(
    "deepseek-parallel-second-call-truncated",
    "tool",
    "openai-chat",
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
    Expect(whole=False, max_tool_calls=1),
    "A call cut at max_tokens reported as 'tool_calls' with unterminated JSON: never callable",
)
shape(
    "anthropic-max-tokens-mid-tool-input",
    "tool",
    "anthropic",
    stream(
        a_start(),
        a_block(0, {"type": "tool_use", "id": "toolu_01WrItE", "name": "write_file", "input": {}}),
        a_json(0, '{"path": "src/app.py", "content": "import os\\n'),
        a_json(0, "def main():\\n    pri"),
        a_stop_block(0),
        *a_end("max_tokens", 6000),
    ),
    Expect(whole=False, tool_calls=0, key_prefix="tool_input_interrupted"),
    "max_tokens hit while a tool_use input streams (eager streaming): partial JSON, tool must not run",
)
shape(
    "responses-incomplete-mid-function-args",
    "tool",
    "openai-responses",
    (
        lambda r: stream(
            *r.opening(),
            r.ev(
                "response.output_item.added",
                output_index=0,
                item={
                    "id": "fc_01held",
                    "type": "function_call",
                    "status": "in_progress",
                    "arguments": "",
                    "call_id": "call_01held",
                    "name": "write_file",
                },
            ),
            r.ev(
                "response.function_call_arguments.delta",
                item_id="fc_01held",
                output_index=0,
                delta='{"path": "notes.md", "content": "# Meeting',
            ),
            r.ev(
                "response.incomplete",
                response=r.response("incomplete", incomplete_details={"reason": "max_output_tokens"}),
            ),
        )
    )(Responses()),
    Expect(whole=False, tool_calls=0, key_prefix="tool_input_interrupted"),
    "Responses ends incomplete (max_output_tokens) while a function call's arguments stream: not callable",
)
shape(
    "dashscope-empty-string-id-continuation",
    "tool",
    "openai-chat",
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
    Expect(whole=True, tool_calls=1, tool_names=("bash",)),
    "DashScope repeats id '' on continuation deltas: one call, bash, complete arguments",
)
shape(
    "dashscope-glm-empty-id-and-name",
    "tool",
    "openai-chat",
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
    Expect(whole=True, tool_calls=1, tool_names=("calculator",)),
    "GLM via DashScope sends id '' and name '' on continuations: still one calculator call",
)
shape(
    "openrouter-responses-item-id-vs-call-id",
    "tool",
    "openai-responses",
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
    Expect(whole=True, tool_calls=1, tool_names=("get_weather",)),
    "OpenRouter streams a call's arguments under item id fc_tmp_* and completes it under call_*: one call",
)
shape(
    "azure-bridge-id-and-name-separate-deltas",
    "tool",
    "openai-chat",
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
    Expect(whole=True, tool_calls=1, tool_names=("get_weather",)),
    "id and name arrive in separate deltas (Azure via a Responses bridge, Mistral): one named call",
)
shape(
    "anthropic-premature-stop-truncated-tool-input",
    "tool",
    "anthropic",
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
    Expect(whole=False, tool_calls=0, text=True),
    "Stream terminated with a stop before all tool-input chunks arrived: invalid JSON, the tool must not run",
)
shape(
    "llamacpp-length-mid-tool-call",
    "tool",
    "openai-chat",
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
    Expect(whole=False, tool_calls=0, key_prefix="tool_input_interrupted"),
    "llama.cpp hits the token limit mid tool call: 'length', arguments cut, the tool must not run",
)

# Root 3: error kinds by words ---------------------------------------------------------------------------

shape(
    "anthropic-credit-balance-too-low",
    "error",
    "anthropic",
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
    Expect(failed=True, kind="quota_exhausted", verdicts=NO_RETRY),
    "Credits used up, sent as 400 invalid_request_error: a quota/billing failure, never retried",
)
shape(
    "zai-anthropic-route-1113-insufficient-balance",
    "error",
    "anthropic",
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
    Expect(failed=True, kind="quota_exhausted", verdicts=NO_RETRY),
    "Z.ai's Anthropic route: 429 typed rate_limit_error but the words say balance: quota, no retry",
)
shape(
    "zhipu-1113-insufficient-balance-chat",
    "error",
    "openai-chat",
    http_error(
        429,
        {
            "error": {
                "code": "1113",
                "message": "Insufficient balance or no resource package. Please recharge.",
            }
        },
    ),
    Expect(failed=True, kind="quota_exhausted", verdicts=NO_RETRY),
    "Zhipu / Z.ai pay-as-you-go: 429 with code 1113 'Insufficient balance': quota, no retry",
)
shape(
    "litellm-budget-exceeded-400",
    "error",
    "openai-chat",
    http_error(
        400,
        {
            "error": {
                "message": "Budget has been exceeded! Current cost: 0.3759, Max budget: 0.35",
                "type": "budget_exceeded",
                "param": None,
                "code": "400",
            }
        },
    ),
    Expect(failed=True, kind="quota_exhausted", verdicts=NO_RETRY),
    "LiteLLM proxy budget exhausted, as 400 type budget_exceeded: spending limit, no retry",
)
shape(
    "litellm-budget-exceeded-429",
    "error",
    "openai-chat",
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
    Expect(failed=True, kind="quota_exhausted", verdicts=NO_RETRY),
    "The same budget_exceeded sent as 429: spending limit, not a rate limit, never retried",
)
shape(
    "groq-tokens-per-day-reset-minutes-away",
    "error",
    "openai-chat",
    http_error(
        429,
        {
            "error": {
                "message": "Rate limit reached for model `llama-3.3-70b-versatile` in organization "
                "`org_01kjh7p9n8f1qs6nz2bz77vy6b` service tier `on_demand` on tokens per day (TPD): "
                "Limit 100000, Used 97050, Requested 3619. Please try again in 9m38.016s. Need more "
                "tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing",
                "type": "tokens",
                "code": "rate_limit_exceeded",
            }
        },
    ),
    Expect(failed=True, not_auto_soon=True),
    "Groq per-day token limit, reset stated ~10 minutes away in the message: no automatic retry within 60 s",
)
shape(
    "azure-retry-after-86400-in-message",
    "error",
    "openai-chat",
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
    Expect(failed=True, not_auto_soon=True),
    "Azure S0 tier: 'Please retry after 86400 seconds' in the body: a day away, no automatic retry",
)
shape(
    "vertex-per-minute-quota-resource-exhausted",
    "error",
    "gemini",
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
    Expect(failed=True, kind="rate_limit", verdicts=SAFE),
    "Vertex per-minute quota (RESOURCE_EXHAUSTED): says 'quota' but clears in a minute: a rate limit",
)
shape(
    "gemini-cli-capacity-reset-hours-away",
    "error",
    "gemini",
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
    Expect(failed=True, not_auto_soon=True),
    "A plan limit whose reset is hours away (8h44m): not an automatic retry",
)
shape(
    "gemini-no-capacity-rate-limit-exceeded",
    "error",
    "gemini",
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
    Expect(failed=True, verdicts=SAFE),
    "No capacity on the server (RESOURCE_EXHAUSTED, rateLimitExceeded): transient, safe to retry",
)
shape(
    "openrouter-free-models-per-day-in-band",
    "error",
    "openai-chat",
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
    Expect(failed=True, not_auto_soon=True),
    "OpenRouter daily free-model cap as an in-band error at 200: resets at midnight UTC, no automatic retry",
)
shape(
    "kimi-usage-limit-billing-cycle-403",
    "error",
    "openai-chat",
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
    Expect(failed=True, kind="quota_exhausted", verdicts=NO_RETRY),
    "Kimi: 403 'usage limit for this billing cycle': a plan limit (quota), not a permission error",
)
shape(
    "mistral-service-tier-capacity-exceeded",
    "error",
    "openai-chat",
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
    Expect(failed=True, verdicts=SAFE),
    "Mistral: capacity exceeded, typed invalid_request_error: transient capacity, safe to retry after a wait",
)
shape(
    "moonshot-engine-overloaded",
    "error",
    "openai-chat",
    http_error(
        429,
        {
            "error": {
                "message": "The engine is currently overloaded, please try again later",
                "type": "engine_overloaded_error",
            }
        },
    ),
    Expect(failed=True, kind="overloaded", verdicts=SAFE),
    "Moonshot/Kimi 429 engine_overloaded_error: the provider is overloaded, safe to retry",
)
shape(
    "cohere-trial-key-monthly-limit",
    "error",
    "openai-chat",
    http_error(
        429,
        {
            "message": "You are using a Trial key, which is limited to 1000 API calls / month. You can "
            "continue to use the Trial key for free or upgrade to a Production key with higher rate limits "
            "at 'https://dashboard.cohere.com/api-keys'."
        },
    ),
    Expect(failed=True, not_auto_soon=True),
    "Cohere trial key's monthly call limit: plan limit, resets next month, no automatic retry",
)

# Root 4: content shapes the adapter must read ---------------------------------------------------------------

shape(
    "mistral-magistral-content-parts",
    "content",
    "openai-chat",
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
    Expect(whole=True, text=True),
    "Magistral streams delta.content as a list of typed parts (thinking, then text): the text is the answer",
)
shape(
    "llamacpp-error-sse-field",
    "content",
    "openai-chat",
    stream(
        b'error: {"code":400,"message":"the request exceeds the available context size. try increasing the '
        b'context size or enable context shift","type":"invalid_request_error"}\n\n',
        DONE,
    ),
    Expect(whole=False, failed=True, kind="context_overflow", verdicts=NO_RETRY),
    "llama.cpp (2025 builds) sends a mid-stream error on a non-standard 'error:' SSE field, then [DONE]",
)
shape(
    "vllm-object-error-mid-stream",
    "content",
    "openai-chat",
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
    Expect(whole=False, failed=True, verdicts=NOT_SAFE, text=True),
    "vLLM's error shape {'object': 'error', ...} mid-stream (no 'error' key): a provider error after output",
)
shape(
    "vllm-error-before-first-token-swallowed",
    "content",
    "openai-chat",
    stream(
        chat({"role": "assistant", "content": ""}, model="Qwen/Qwen3-8B"),
        DONE,
    ),
    Expect(whole=False, text=False),
    "vLLM dropped a first-token error, sent a role chunk and [DONE]: nothing read, not whole",
)
shape(
    "gemini-leading-empty-stop-then-text",
    "content",
    "gemini",
    stream(
        g_chunk([], "STOP"),
        g_chunk([], "STOP"),
        g_chunk([{"text": "Gemini streams"}]),
        g_chunk([{"text": " the whole answer."}]),
        g_chunk([], "STOP", usageMetadata=G_USAGE),
    ),
    Expect(whole=True, text=True),
    "A translating gateway sends empty STOP candidates before the text: the text that follows is the answer",
)
shape(
    "gemini-stop-on-every-chunk",
    "content",
    "gemini",
    stream(
        g_chunk([{"text": "你好"}], "STOP"),
        g_chunk([{"text": "！很高兴认识你。"}], "STOP"),
        g_chunk([{"text": "请问有什么问题需要我解答吗？"}], "STOP", usageMetadata=G_USAGE),
    ),
    Expect(whole=True, text=True),
    "Gemini/Vertex put finishReason STOP on every chunk: all of the text arrives and the answer is whole",
)

shape(
    "responses-output-text-done-only",
    "content",
    "openai-responses",
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
    Expect(whole=True, text=True),
    "A web-to-API bridge's Responses stream carries the answer only in response.output_text.done",
)
shape(
    "chat-chunk-message-instead-of-delta",
    "content",
    "openai-chat",
    stream(
        sse(
            {
                "id": "chatcmpl-webai",
                "object": "chat.completion.chunk",
                "created": 1769731200,
                "model": "gemini-3.0-pro",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Hello! How can I help you today?"},
                        "finish_reason": "stop",
                    }
                ],
            }
        ),
        DONE,
    ),
    Expect(whole=True, text=True),
    "A stream=true chat chunk carrying 'message' (the whole answer) instead of 'delta': it is the answer",
)

# Control group: known-good shapes that must stay right --------------------------------------------------

shape(
    "azure-prompt-filter-results-first",
    "control",
    "openai-chat",
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
    Expect(whole=True, text=True),
    "Azure's first chunk has no choices, only prompt_filter_results; the answer is whole",
)
shape(
    "dashscope-deepseek-r1-data-no-space",
    "control",
    "openai-chat",
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
    Expect(whole=True, text=True),
    "DashScope's deepseek-r1: 'data:' with no space, reasoning_content then content, finish stop: whole",
)
shape(
    "ollama-openai-compat-whole-tool-call",
    "control",
    "openai-chat",
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
    Expect(whole=True, tool_calls=1, tool_names=("function_1",)),
    "Ollama sends a whole call (no index) and finish_reason 'tool_calls' in one chunk: one callable call",
)
shape(
    "anthropic-stop-sequence-with-pings",
    "control",
    "anthropic",
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
    Expect(whole=True, text=True),
    "stop_reason 'stop_sequence' (a caller's stop sequence fired) with pings between deltas: a whole answer",
)
shape(
    "responses-reasoning-only-incomplete",
    "control",
    "openai-responses",
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
    Expect(whole=False, text=False),
    "Only reasoning, then response.incomplete for max_output_tokens: no answer at all, not whole",
)
shape(
    "deepseek-402-insufficient-balance",
    "control",
    "openai-chat",
    http_error(
        402,
        {
            "error": {
                "message": "Insufficient Balance",
                "type": "unknown_error",
                "param": None,
                "code": "invalid_request_error",
            }
        },
    ),
    Expect(failed=True, kind="quota_exhausted", verdicts=NO_RETRY),
    "DeepSeek 402 Insufficient Balance: quota, never retried",
)
shape(
    "ollama-empty-finish-reason-every-chunk",
    "control",
    "openai-chat",
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
    Expect(whole=True, text=True),
    "Ollama sent finish_reason '' (empty string) on every chunk before 'stop': all text, whole answer",
)
shape(
    "groq-x-groq-final-chunk",
    "control",
    "openai-chat",
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
    Expect(whole=True, text=True),
    "Groq adds an x_groq object (with its usage) to chunks; finish stop: a whole answer",
)

shape(
    "koboldcpp-finish-reason-null-string",
    "control",
    "openai-chat",
    stream(
        *(
            chat({"content": piece}, "null", cid="chatcmpl-kcpp", model="koboldcpp/llama")
            for piece in ("Once", " upon", " a", " time.")
        ),
        chat({"content": ""}, "stop", cid="chatcmpl-kcpp", model="koboldcpp/llama"),
        DONE,
    ),
    Expect(whole=True, text=True),
    "KoboldCpp sent the string 'null' as finish_reason on every chunk before 'stop': not a finish; all text",
)
shape(
    "proxy-message-start-without-content",
    "control",
    "anthropic",
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
    Expect(whole=True, text=True),
    "A converting proxy's message_start lacks content/stop_reason/stop_sequence; the answer is whole",
)
shape(
    "azure-extensions-chunk-end-turn",
    "control",
    "openai-chat",
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
    Expect(whole=True, text=True),
    "Azure 'On your data' streams object extensions.chat.completion.chunk with end_turn: a whole answer",
)
shape(
    "gateway-in-band-error-then-done",
    "control",
    "openai-chat",
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
    Expect(whole=False, failed=True, kind="invalid_request", verdicts=NO_RETRY),
    "A gateway reports the upstream's 400 in-band ('event: error', an error object) then [DONE]: not retried",
)

SHAPES: Final[tuple[Shape, ...]] = tuple(_S)

_ids = [s.id for s in SHAPES]
if len(set(_ids)) != len(_ids):  # a duplicate id is a bug in this file
    raise ValueError("duplicate shape ids")
