"""Catalog scenarios for OpenAI's tool kinds, each played as the API reference documents its wire: custom
(freeform) tools, parallel calls whose events interleave, client actions (computer use, MCP approval),
hosted tools (a container shell, a failed web search), compaction, a call announced whole in one event,
the deprecated functions API, usage inside a choice, and errors said as a string.

References: https://platform.openai.com/docs/api-reference/responses-streaming (the events),
https://platform.openai.com/docs/guides/function-calling (custom tools, parallel calls),
https://platform.openai.com/docs/guides/tools-computer-use, https://platform.openai.com/docs/guides/tools-shell,
https://platform.openai.com/docs/api-reference/chat-streaming.
"""

from __future__ import annotations

from typing import Any, Final

from ..classify import Action, FailureClass, Phase, Verdict
from ..machine import Trigger
from ._realworld import DONE, Responses, chat, stream
from ._script import Fin, Headers, Send, Step

__all__ = ["rows"]

_C, _V, _A, _P, _T = FailureClass, Verdict, Action, Phase, Trigger
Row = tuple[str, str, tuple[Step, ...], dict[str, Any], dict[str, Any]]

PATCH: Final = "*** Begin Patch\n*** Update File: app.py\n@@\n-x = 1\n+x = 2\n*** End Patch"


def _expect(
    klass: FailureClass,
    verdict: Verdict,
    edge: Trigger | None,
    phase: Phase,
    cause: str,
    action: Action,
) -> dict[str, Any]:
    return {
        "expected_class": klass,
        "expected_verdict": verdict,
        "expected_edge": edge,
        "expected_phase": phase,
        "expected_cause": cause,
        "expected_action": action,
        "expected_retry_after_s": None,
    }


OVERLOADED_WORDS: Final = "Upstream model server overloaded, please retry"
OVERLOADED: Final = _expect(
    _C.PROVIDER_ERROR,
    _V.SAFE_AUTO_RETRY,
    _T.PROVIDER_ERROR_EVENT,
    _P.EARLY_STREAM,
    "overloaded",
    _A.RETRY_AFTER_BACKOFF,
)
COMPLETED: Final = _expect(_C.COMPLETED, _V.NO_RETRY, None, _P.FINISHED, "finished", _A.NONE)
CUT_IN_INPUT: Final = _expect(
    _C.TOOL_INPUT_INTERRUPTED, _V.SAFE_AUTO_RETRY, _T.DISCONNECTED, _P.TOOL_INPUT, "closed_mid_body", _A.RETRY
)
UNFINISHED_AT_LENGTH: Final = _expect(
    _C.TOOL_INPUT_INTERRUPTED, _V.NO_RETRY, _T.TOOL_INPUT_UNFINISHED, _P.TOOL_INPUT, "length", _A.FIX_REQUEST
)


def _function(item_id: str, call_id: str, name: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": "",
        **extra,
    }


def _responses() -> list[Row]:
    out: list[Row] = []
    r = Responses()
    custom = {
        "type": "custom_tool_call",
        "id": "ctc_1",
        "call_id": "call_c1",
        "name": "apply_patch",
        "input": "",
    }
    out.append(
        (
            "custom-tool-call-freeform-input",
            "a custom (freeform) tool's input streams as raw text, not JSON, and ends with its done event:"
            " a whole call",
            stream(
                *r.opening(),
                r.ev("response.output_item.added", output_index=0, item={**custom, "status": "in_progress"}),
                r.ev(
                    "response.custom_tool_call_input.delta", item_id="ctc_1", output_index=0, delta=PATCH[:20]
                ),
                r.ev(
                    "response.custom_tool_call_input.delta", item_id="ctc_1", output_index=0, delta=PATCH[20:]
                ),
                r.ev("response.custom_tool_call_input.done", item_id="ctc_1", output_index=0, input=PATCH),
                r.ev("response.output_item.done", output_index=0, item={**custom, "input": PATCH}),
                r.ev("response.completed", response=r.response("completed")),
            ),
            COMPLETED,
            {},
        )
    )
    r = Responses()
    a, b = _function("fc_a", "call_a", "get_weather"), _function("fc_b", "call_b", "get_time")

    def interleaved(r: Responses) -> list[bytes]:
        return [
            *r.opening(),
            r.ev("response.output_item.added", output_index=0, item=a),
            r.ev("response.output_item.added", output_index=1, item=b),
            r.ev("response.function_call_arguments.delta", item_id="fc_a", output_index=0, delta='{"city":'),
            r.ev("response.function_call_arguments.delta", item_id="fc_b", output_index=1, delta='{"tz":'),
            r.ev("response.function_call_arguments.delta", item_id="fc_a", output_index=0, delta=' "Paris"}'),
        ]

    head = interleaved(r)
    out.append(
        (
            "parallel-calls-interleaved",
            "two function calls whose argument deltas interleave by item_id: two whole calls",
            stream(
                *head,
                r.ev(
                    "response.function_call_arguments.delta", item_id="fc_b", output_index=1, delta=' "CET"}'
                ),
                r.ev("response.function_call_arguments.done", item_id="fc_a", arguments='{"city": "Paris"}'),
                r.ev("response.function_call_arguments.done", item_id="fc_b", arguments='{"tz": "CET"}'),
                r.ev(
                    "response.output_item.done", output_index=0, item={**a, "arguments": '{"city": "Paris"}'}
                ),
                r.ev("response.output_item.done", output_index=1, item={**b, "arguments": '{"tz": "CET"}'}),
                r.ev("response.completed", response=r.response("completed")),
            ),
            COMPLETED,
            {},
        )
    )
    out.append(
        (
            "parallel-calls-interleaved-cut",
            "two interleaved function calls, cut while both are open: interrupted tool input, no tool ran",
            (Headers(), *(Send(f) for f in interleaved(Responses())), Fin()),
            CUT_IN_INPUT,
            {},
        )
    )
    r = Responses()
    computer = {"type": "computer_call", "id": "cu_1", "call_id": "call_cu1", "pending_safety_checks": []}
    click = {"type": "click", "button": "left", "x": 156, "y": 50}
    out.append(
        (
            "computer-call",
            "a computer_call (the client performs the action): a whole call once its item is completed",
            stream(
                *r.opening(),
                r.ev(
                    "response.output_item.added", output_index=0, item={**computer, "status": "in_progress"}
                ),
                r.ev(
                    "response.output_item.done",
                    output_index=0,
                    item={**computer, "status": "completed", "action": click},
                ),
                r.ev("response.completed", response=r.response("completed")),
            ),
            COMPLETED,
            {},
        )
    )
    r = Responses()
    out.append(
        (
            "computer-call-incomplete-at-the-limit",
            "a computer_call whose item ends incomplete at the output limit: never a call to perform",
            stream(
                *r.opening(),
                r.ev(
                    "response.output_item.added", output_index=0, item={**computer, "status": "in_progress"}
                ),
                r.ev("response.output_item.done", output_index=0, item={**computer, "status": "incomplete"}),
                r.ev(
                    "response.incomplete",
                    response=r.response("incomplete", incomplete_details={"reason": "max_output_tokens"}),
                ),
            ),
            UNFINISHED_AT_LENGTH,
            {},
        )
    )
    r = Responses()
    approval = {
        "type": "mcp_approval_request",
        "id": "mcpr_1",
        "server_label": "deepwiki",
        "name": "ask_question",
        "arguments": '{"repoName": "openai/codex"}',
    }
    out.append(
        (
            "mcp-approval-request",
            "an MCP approval request: the client must answer it, a whole call the agent acts on",
            stream(
                *r.opening(),
                r.ev("response.output_item.added", output_index=0, item=approval),
                r.ev("response.output_item.done", output_index=0, item=approval),
                r.ev("response.completed", response=r.response("completed")),
            ),
            COMPLETED,
            {},
        )
    )
    r = Responses()
    shell = {
        "type": "shell_call",
        "id": "sh_1",
        "call_id": "call_sh1",
        "environment": {"type": "container_reference", "container_id": "cntr_1"},
        "action": {"commands": ["ls"]},
    }
    out.append(
        (
            "hosted-shell-in-a-container",
            "a shell call run by the provider in its container (command and output deltas), then the answer:"
            " bookkeeping, not unread content",
            stream(
                *r.opening(),
                r.ev("response.output_item.added", output_index=0, item={**shell, "status": "in_progress"}),
                r.ev("response.shell_call_command.added", output_index=0, command_index=0, command=""),
                r.ev("response.shell_call_command.delta", output_index=0, command_index=0, delta="ls"),
                r.ev("response.shell_call_command.done", output_index=0, command_index=0, command="ls"),
                r.ev(
                    "response.shell_call_output_content.delta",
                    item_id="sh_1",
                    output_index=0,
                    command_index=0,
                    delta={"stdout": "app.py\n"},
                ),
                r.ev("response.output_item.done", output_index=0, item={**shell, "status": "completed"}),
                r.ev(
                    "response.output_text.delta", item_id="msg_1", output_index=1, delta="One file: app.py."
                ),
                r.ev("response.completed", response=r.response("completed")),
            ),
            COMPLETED,
            {},
        )
    )
    r = Responses()
    out.append(
        (
            "compaction-then-answer",
            "context compaction (its event and encrypted item carry no content), then the answer",
            stream(
                *r.opening(),
                r.ev("response.compaction.compacting", item_id="cmp_1", output_index=0),
                r.ev(
                    "response.output_item.done",
                    output_index=0,
                    item={"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA"},
                ),
                r.ev("response.output_text.delta", item_id="msg_1", output_index=1, delta="Done."),
                r.ev("response.completed", response=r.response("completed")),
            ),
            COMPLETED,
            {},
        )
    )
    r = Responses()
    whole = _function("fc_w", "call_w", "get_weather", arguments='{"city": "Oslo"}', status="completed")
    out.append(
        (
            "call-announced-whole",
            "output_item.added already carries the call's whole arguments, then its done item: one call",
            stream(
                *r.opening(),
                r.ev("response.output_item.added", output_index=0, item=whole),
                r.ev("response.output_item.done", output_index=0, item=whole),
                r.ev("response.completed", response=r.response("completed")),
            ),
            COMPLETED,
            {},
        )
    )
    r = Responses()
    search = {"type": "web_search_call", "id": "ws_1", "action": {"type": "search", "query": "x"}}
    out.append(
        (
            "hosted-web-search-failed",
            "a hosted web search fails (its item's status), the model answers without it: a whole answer",
            stream(
                *r.opening(),
                r.ev("response.output_item.added", output_index=0, item={**search, "status": "in_progress"}),
                r.ev("response.web_search_call.in_progress", item_id="ws_1", output_index=0),
                r.ev("response.output_item.done", output_index=0, item={**search, "status": "failed"}),
                r.ev(
                    "response.output_text.delta", item_id="msg_1", output_index=1, delta="I could not search."
                ),
                r.ev("response.completed", response=r.response("completed")),
            ),
            COMPLETED,
            {},
        )
    )
    r = Responses()
    out.append(
        (
            "failed-with-an-error-string",
            "response.failed whose error is a string, not an object: its words are read",
            stream(
                *r.opening(),
                r.ev("response.failed", response=r.response("failed", error=OVERLOADED_WORDS)),
            ),
            OVERLOADED,
            {},
        )
    )
    return out


def _frag(index: int, body: dict[str, Any], **first: Any) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, **first, **body}]}


def _chat() -> list[Row]:
    out: list[Row] = []
    custom = {"index": 0, "id": "call_c1", "type": "custom"}
    out.append(
        (
            "custom-tool-call-freeform-input",
            "a custom (freeform) tool call in chat: its input is raw text in fragments, ended by the finish",
            stream(
                chat(
                    {
                        "role": "assistant",
                        "tool_calls": [{**custom, "custom": {"name": "apply_patch", "input": ""}}],
                    }
                ),
                chat({"tool_calls": [{"index": 0, "custom": {"input": PATCH[:20]}}]}),
                chat({"tool_calls": [{"index": 0, "custom": {"input": PATCH[20:]}}]}),
                chat({}, "tool_calls"),
                DONE,
            ),
            COMPLETED,
            {},
        )
    )

    def call(index: int, name: str, arguments: str) -> dict[str, Any]:
        return _frag(
            index, {"function": {"name": name, "arguments": arguments}}, id=f"call_{index}", type="function"
        )

    def more(index: int, arguments: str) -> dict[str, Any]:
        return _frag(index, {"function": {"arguments": arguments}})

    head = [
        chat({"role": "assistant", **call(0, "get_weather", '{"city":')}),
        chat(call(1, "get_time", '{"tz":')),
        chat(more(0, ' "Paris"}')),
    ]
    out.append(
        (
            "parallel-calls-interleaved",
            "two calls whose fragments interleave by index: two whole calls",
            stream(*head, chat(more(1, ' "CET"}')), chat({}, "tool_calls"), DONE),
            COMPLETED,
            {},
        )
    )
    out.append(
        (
            "parallel-calls-interleaved-cut",
            "two interleaved calls, cut while the second is open: interrupted tool input, no tool ran",
            (Headers(), *(Send(f) for f in head), Fin()),
            CUT_IN_INPUT,
            {},
        )
    )
    out.append(
        (
            "deprecated-function-call-delta",
            "the deprecated functions API: delta.function_call fragments, finish_reason function_call",
            stream(
                chat({"role": "assistant", "function_call": {"name": "get_weather", "arguments": ""}}),
                chat({"function_call": {"arguments": '{"city": "Oslo"}'}}),
                chat({}, "function_call"),
                DONE,
            ),
            COMPLETED,
            {},
        )
    )
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    out.append(
        (
            "usage-inside-the-choice",
            "usage sent inside the finishing choice rather than beside it: read, a whole answer",
            stream(
                chat({"role": "assistant", "content": "Hi."}),
                chat({}, "stop", choice_extra={"usage": usage}),
                DONE,
            ),
            COMPLETED,
            {},
        )
    )
    out.append(
        (
            "error-string-in-the-choice",
            "an error said as a string inside the choice (gateways): the provider's error, read by its words",
            stream(
                chat({"role": "assistant", "content": ""}, choice_extra={"error": OVERLOADED_WORDS}), DONE
            ),
            OVERLOADED,
            {},
        )
    )
    return out


def rows(fmt: str) -> list[Row]:
    """The tool-kind scenarios of ``fmt`` (none for a format other than OpenAI's)."""
    if fmt == "openai-responses":
        return _responses()
    if fmt == "openai-chat":
        return _chat()
    return []
