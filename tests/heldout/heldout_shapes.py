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
catalog scenarios (``streamfsm/testing/_realworld.py``), except the shapes the catalog already had and the one
shape main still misses (SOURCES.md says which): a shape in the catalog reads its wire from there by scenario
name, the others are built here with the catalog's wire builders.
"""

# The wire text of Chinese providers is kept as sent (full-width punctuation included).

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from streamfsm.testing import Step, find
from streamfsm.testing._realworld import (
    DONE,
    Responses,
    a_block,
    a_end,
    a_json,
    a_start,
    a_stop_block,
    chat,
    chat_text,
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


# The shapes that became catalog scenarios are read from the catalog (`catalogued`), the others are built
# with the catalog's wire builders (streamfsm/testing/_realworld.py): one copy of each wire, so the held-out
# set and the catalog cannot drift apart.


# -- the set ----------------------------------------------------------------------------------------------

_S: list[Shape] = []


def shape(
    id: str, root: str, fmt: str, script: tuple[Step, ...], expect: Expect, why: str, *tags: str
) -> None:
    """A shape the catalog leaves out (it repeats a catalog scenario's outcome, or main still misses it)."""
    _S.append(Shape(id, root, fmt, script, expect, why, tags))


def catalogued(id: str, root: str, name: str, expect: Expect, *tags: str) -> None:
    """A shape the catalog plays as scenario ``name``: its format, wire and why are the scenario's."""
    scenario = find(name)
    _S.append(Shape(id, root, scenario.format, scenario.script, expect, scenario.description, tags))


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
catalogued(
    "zhipu-sensitive-finish",
    "finish",
    "openai-chat/finish-sensitive",
    Expect(whole=False, verdicts=NOT_SAFE, text=True),
)
catalogued(
    "deepseek-insufficient-system-resource",
    "finish",
    "openai-chat/finish-insufficient-system-resource",
    Expect(whole=False, verdicts=NOT_SAFE, text=True),
)
catalogued(
    "tgi-eos-token-finish",
    "finish",
    "openai-chat/finish-eos-token",
    Expect(whole=True, text=True),
)
catalogued(
    "anthropic-pause-turn",
    "finish",
    "anthropic/server-tool-then-pause-turn",
    Expect(whole=False, verdicts=NOT_SAFE, text=True),
)
catalogued(
    "gemini-finish-other",
    "finish",
    "gemini/finish-other",
    Expect(whole=False, verdicts=NOT_SAFE, text=True),
)
catalogued(
    "vllm-done-without-finish-reason",
    "finish",
    "openai-chat/done-without-finish-reason",
    Expect(whole=False, text=True),
)
catalogued(
    "mistral-model-length-finish",
    "finish",
    "openai-chat/finish-model-length",
    Expect(whole=False, verdicts=NOT_SAFE, text=True),
)

# Root 2: tool calls: complete before callable, one call under two ids, empty-string continuations -----------

_WEATHER = {"type": "function", "function": {"name": "get_current_weather", "arguments": ""}}

catalogued(
    "vllm-truncated-args-finish-tool-calls",
    "tool",
    "openai-chat/tool-args-unparseable-at-tool-calls",
    Expect(whole=False, tool_calls=0),
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
catalogued(
    "deepseek-parallel-second-call-truncated",
    "tool",
    "openai-chat/parallel-second-args-unparseable-at-tool-calls",
    Expect(whole=False, max_tool_calls=1),
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
catalogued(
    "dashscope-empty-string-id-continuation",
    "tool",
    "openai-chat/tool-call-empty-id-on-continuations",
    Expect(whole=True, tool_calls=1, tool_names=("bash",)),
)
catalogued(
    "dashscope-glm-empty-id-and-name",
    "tool",
    "openai-chat/tool-call-empty-id-and-name-on-continuations",
    Expect(whole=True, tool_calls=1, tool_names=("calculator",)),
)
catalogued(
    "openrouter-responses-item-id-vs-call-id",
    "tool",
    "openai-responses/tool-call-item-id-differs-from-call-id",
    Expect(whole=True, tool_calls=1, tool_names=("get_weather",)),
)
catalogued(
    "azure-bridge-id-and-name-separate-deltas",
    "tool",
    "openai-chat/tool-call-id-and-name-in-separate-deltas",
    Expect(whole=True, tool_calls=1, tool_names=("get_weather",)),
)
catalogued(
    "anthropic-premature-stop-truncated-tool-input",
    "tool",
    "anthropic/text-then-tool-input-unparseable-at-stop",
    Expect(whole=False, tool_calls=0, text=True),
)
catalogued(
    "llamacpp-length-mid-tool-call",
    "tool",
    "openai-chat/tool-args-cut-at-length-with-timings",
    Expect(whole=False, tool_calls=0, key_prefix="tool_input_interrupted"),
)

# Root 3: error kinds by words ---------------------------------------------------------------------------

catalogued(
    "anthropic-credit-balance-too-low",
    "error",
    "anthropic/http-400-credit-balance-too-low",
    Expect(failed=True, kind="quota_exhausted", verdicts=NO_RETRY),
)
catalogued(
    "zai-anthropic-route-1113-insufficient-balance",
    "error",
    "anthropic/http-429-insufficient-balance",
    Expect(failed=True, kind="quota_exhausted", verdicts=NO_RETRY),
)
catalogued(
    "zhipu-1113-insufficient-balance-chat",
    "error",
    "openai-chat/http-429-insufficient-balance",
    Expect(failed=True, kind="quota_exhausted", verdicts=NO_RETRY),
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
catalogued(
    "litellm-budget-exceeded-429",
    "error",
    "openai-chat/http-429-budget-exceeded",
    Expect(failed=True, kind="quota_exhausted", verdicts=NO_RETRY),
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
catalogued(
    "azure-retry-after-86400-in-message",
    "error",
    "openai-chat/http-429-retry-after-a-day-in-words",
    Expect(failed=True, not_auto_soon=True),
)
catalogued(
    "vertex-per-minute-quota-resource-exhausted",
    "error",
    "gemini/http-429-per-minute-quota-exceeded",
    Expect(failed=True, kind="rate_limit", verdicts=SAFE),
)
catalogued(
    "gemini-cli-capacity-reset-hours-away",
    "error",
    "gemini/http-429-quota-reset-hours-away",
    Expect(failed=True, not_auto_soon=True),
)
catalogued(
    "gemini-no-capacity-rate-limit-exceeded",
    "error",
    "gemini/http-429-no-capacity",
    Expect(failed=True, verdicts=SAFE),
)
catalogued(
    "openrouter-free-models-per-day-in-band",
    "error",
    "openai-chat/in-band-per-day-limit",
    Expect(failed=True, not_auto_soon=True),
)
catalogued(
    "kimi-usage-limit-billing-cycle-403",
    "error",
    "openai-chat/http-403-usage-limit-for-billing-cycle",
    Expect(failed=True, kind="quota_exhausted", verdicts=NO_RETRY),
)
catalogued(
    "mistral-service-tier-capacity-exceeded",
    "error",
    "openai-chat/http-429-service-tier-capacity-exceeded",
    Expect(failed=True, verdicts=SAFE),
)
catalogued(
    "moonshot-engine-overloaded",
    "error",
    "openai-chat/http-429-engine-overloaded",
    Expect(failed=True, kind="overloaded", verdicts=SAFE),
)
catalogued(
    "cohere-trial-key-monthly-limit",
    "error",
    "openai-chat/http-429-trial-key-monthly-limit",
    Expect(failed=True, not_auto_soon=True),
)

# Root 4: content shapes the adapter must read ---------------------------------------------------------------

catalogued(
    "mistral-magistral-content-parts",
    "content",
    "openai-chat/content-parts-thinking-then-text",
    Expect(whole=True, text=True),
)
catalogued(
    "llamacpp-error-sse-field",
    "content",
    "openai-chat/error-sse-field-context-overflow",
    Expect(whole=False, failed=True, kind="context_overflow", verdicts=NO_RETRY),
)
catalogued(
    "vllm-object-error-mid-stream",
    "content",
    "openai-chat/object-error-after-output-then-done",
    Expect(whole=False, failed=True, verdicts=NOT_SAFE, text=True),
)
catalogued(
    "vllm-error-before-first-token-swallowed",
    "content",
    "openai-chat/done-without-any-output",
    Expect(whole=False, text=False),
)
catalogued(
    "gemini-leading-empty-stop-then-text",
    "content",
    "gemini/empty-stop-chunk-then-text",
    Expect(whole=True, text=True),
)
catalogued(
    "gemini-stop-on-every-chunk",
    "content",
    "gemini/stop-on-every-chunk",
    Expect(whole=True, text=True),
)

catalogued(
    "responses-output-text-done-only",
    "content",
    "openai-responses/output-text-done-only",
    Expect(whole=True, text=True),
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

catalogued(
    "azure-prompt-filter-results-first",
    "control",
    "openai-chat/prompt-filter-results-first",
    Expect(whole=True, text=True),
)
catalogued(
    "dashscope-deepseek-r1-data-no-space",
    "control",
    "openai-chat/data-without-space-reasoning-then-text",
    Expect(whole=True, text=True),
)
catalogued(
    "ollama-openai-compat-whole-tool-call",
    "control",
    "openai-chat/whole-tool-call-in-one-chunk",
    Expect(whole=True, tool_calls=1, tool_names=("function_1",)),
)
catalogued(
    "anthropic-stop-sequence-with-pings",
    "control",
    "anthropic/pings-then-stop-sequence",
    Expect(whole=True, text=True),
)
catalogued(
    "responses-reasoning-only-incomplete",
    "control",
    "openai-responses/reasoning-only-then-incomplete",
    Expect(whole=False, text=False),
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
catalogued(
    "ollama-empty-finish-reason-every-chunk",
    "control",
    "openai-chat/empty-finish-reason-on-every-chunk",
    Expect(whole=True, text=True),
)
catalogued(
    "groq-x-groq-final-chunk",
    "control",
    "openai-chat/usage-in-extension-field-of-final-chunk",
    Expect(whole=True, text=True),
)

catalogued(
    "koboldcpp-finish-reason-null-string",
    "control",
    "openai-chat/finish-reason-null-as-string",
    Expect(whole=True, text=True),
)
catalogued(
    "proxy-message-start-without-content",
    "control",
    "anthropic/message-start-without-content",
    Expect(whole=True, text=True),
)
catalogued(
    "azure-extensions-chunk-end-turn",
    "control",
    "openai-chat/extensions-chunks-with-end-turn",
    Expect(whole=True, text=True),
)
catalogued(
    "gateway-in-band-error-then-done",
    "control",
    "openai-chat/error-event-invalid-request-then-done",
    Expect(whole=False, failed=True, kind="invalid_request", verdicts=NO_RETRY),
)

SHAPES: Final[tuple[Shape, ...]] = tuple(_S)

_ids = [s.id for s in SHAPES]
if len(set(_ids)) != len(_ids):  # a duplicate id is a bug in this file
    raise ValueError("duplicate shape ids")
