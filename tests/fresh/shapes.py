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

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from streamfsm.testing import End, Headers, Send, Step
from streamfsm.testing._eventstream import CONTENT_TYPE as EVENT_STREAM
from streamfsm.testing._eventstream import converse_event
from streamfsm.testing._realworld import (
    DONE,
    G_USAGE,
    Responses,
    a_block,
    a_delta,
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


def _built(build: Callable[[Responses], tuple[Step, ...]], model: str = "gpt-5.1") -> tuple[Step, ...]:
    return build(Responses(rid="resp_fr35h", model=model))


def _j(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


NDJSON: Final = Headers(headers=(("content-type", "application/x-ndjson"),))
BEDROCK: Final = Headers(headers=(("content-type", EVENT_STREAM), ("x-amzn-requestid", "5e1d-fr35h")))


def _lines(*frames: bytes, head: Headers = NDJSON) -> tuple[Step, ...]:
    return (head, *(Send(f) for f in frames), End())


# Feature: OpenAI Responses ------------------------------------------------------------------------------


def _custom_tool(r: Responses) -> tuple[Step, ...]:
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


shape(
    "responses-custom-tool-freeform-input",
    "feature",
    "openai-responses",
    _built(_custom_tool, "gpt-5-nano"),
    Expect(whole=True, tool_calls=1, tool_names=("shell",), freeform=(("shell", "echo hello"),)),
    "a custom (freeform) tool's input is raw text ('echo hello'), complete at its done event: one callable call",
)


def _parallel(r: Responses) -> tuple[Step, ...]:
    titles = ["Organize the digital photo folder", "Try a new recipe for dinner", "Take a 20-minute walk"]
    items = [
        {"id": f"fc_{i}fr35h", "type": "function_call", "status": "in_progress", "call_id": f"call_t{i}"}
        for i in range(3)
    ]
    args = [_j({"title": t}) for t in titles]
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


shape(
    "responses-parallel-calls-interleaved",
    "feature",
    "openai-responses",
    _built(_parallel),
    Expect(whole=True, tool_calls=3, tool_names=("add_task", "add_task", "add_task")),
    "three parallel function calls whose argument deltas interleave (keyed by item_id/output_index): 3 calls",
)


def _message(
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


def _mcp_call(r: Responses) -> tuple[Step, ...]:
    tools = {"id": "mcpl_0fr35h", "type": "mcp_list_tools", "server_label": "deepwiki", "tools": []}
    listed = {**tools, "tools": [{"name": "ask_question", "input_schema": {"type": "object"}}]}
    args = _j({"repoName": "modelcontextprotocol/modelcontextprotocol", "question": "transports?"})
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
        *_message(r, 2, "The 2025-03-26 spec supports", " stdio and Streamable HTTP."),
        r.ev("response.completed", response=r.response("completed")),
    )


shape(
    "responses-hosted-mcp-call-then-text",
    "feature",
    "openai-responses",
    _built(_mcp_call, "gpt-5"),
    Expect(whole=True, text=True, tool_calls=0),
    "a hosted MCP call runs on OpenAI's side (list tools, call, output), then text: whole, nothing to execute",
)


def _mcp_approval(r: Responses) -> tuple[Step, ...]:
    request = {
        "id": "mcpr_0fr35h",
        "type": "mcp_approval_request",
        "server_label": "deepwiki",
        "name": "ask_question",
        "arguments": _j({"repoName": "openai/codex", "question": "What is apply_patch?"}),
    }
    return stream(
        *r.opening(),
        r.ev("response.output_item.added", output_index=0, item=request),
        r.ev("response.output_item.done", output_index=0, item=request),
        r.ev("response.completed", response=r.response("completed", output=[request])),
    )


shape(
    "responses-mcp-approval-request",
    "feature",
    "openai-responses",
    _built(_mcp_approval),
    Expect(failed=False, tool_calls=0),
    "the response completes asking the user to approve a hosted MCP call: not a failure, and not a call the"
    " agent executes (the approval goes back in the next request)",
)


def _web_search(r: Responses) -> tuple[Step, ...]:
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
        *_message(
            r, 1, "The Act's obligations for GPAI models", " apply from August 2025.", annotations=[cite]
        ),
        r.ev("response.completed", response=r.response("completed")),
    )


shape(
    "responses-web-search-with-citation",
    "feature",
    "openai-responses",
    _built(_web_search),
    Expect(whole=True, text=True, tool_calls=0),
    "built-in web search (in_progress, searching, completed) then cited text: a whole answer, no call to run",
)


def _code_interpreter(r: Responses) -> tuple[Step, ...]:
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
        *_message(r, 1, "20! is ", "2432902008176640000."),
        r.ev("response.completed", response=r.response("completed")),
    )


shape(
    "responses-code-interpreter-then-text",
    "feature",
    "openai-responses",
    _built(_code_interpreter),
    Expect(whole=True, text=True, tool_calls=0),
    "code interpreter streams its code, interprets, completes; then text: a whole answer, nothing to execute",
)


def _image_generation(r: Responses) -> tuple[Step, ...]:
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


shape(
    "responses-image-generation-partial-images",
    "feature",
    "openai-responses",
    _built(_image_generation),
    Expect(failed=False, tool_calls=0),
    "image generation streams partial images and completes: a completed response, never a failure",
)


def _shell_call(r: Responses) -> tuple[Step, ...]:
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


shape(
    "responses-shell-tool-call",
    "feature",
    "openai-responses",
    _built(_shell_call),
    Expect(whole=True, failed=False),
    "the shell tool's call streams its commands and completes: the turn ended asking the client to run them",
)


def _apply_patch(r: Responses) -> tuple[Step, ...]:
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


shape(
    "responses-apply-patch-call",
    "feature",
    "openai-responses",
    _built(_apply_patch),
    Expect(whole=True, failed=False),
    "the apply_patch tool's call (an update_file operation) completes the turn: whole, for the client to apply",
)


def _compaction(r: Responses) -> tuple[Step, ...]:
    item = {"id": "cmp_0fr35h", "type": "compaction", "encrypted_content": "gAAAAABpZ2Vu"}
    return stream(
        *r.opening(),
        r.ev("response.output_item.added", output_index=0, item=item),
        r.ev("response.output_item.done", output_index=0, item=item),
        *_message(r, 1, "Picking up where we left off:", " the migration is done."),
        r.ev("response.completed", response=r.response("completed")),
    )


shape(
    "responses-compaction-item-then-text",
    "feature",
    "openai-responses",
    _built(_compaction),
    Expect(whole=True, text=True, tool_calls=0),
    "a compaction item (encrypted, opaque) precedes the answer: housekeeping, the answer is whole",
)


def _reasoning_then_call(r: Responses) -> tuple[Step, ...]:
    rs = {"id": "rs_0fr35h", "type": "reasoning", "summary": []}
    fc = {"id": "fc_0fr35h", "type": "function_call", "call_id": "call_w1", "name": "get_weather"}
    args = _j({"city": "Paris", "unit": "celsius"})
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


shape(
    "responses-reasoning-summary-then-call",
    "feature",
    "openai-responses",
    _built(_reasoning_then_call),
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

_A, _B = _j({"a": 2, "b": 2}), _j({"location": "Tokyo", "unit": "celsius"})
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
        chat({"tool_calls": [{"index": 0, "function": {"arguments": _A[:6]}}]}, model="gpt-5.1"),
        chat({"tool_calls": [{"index": 1, "function": {"arguments": _B[:12]}}]}, model="gpt-5.1"),
        chat({"tool_calls": [{"index": 0, "function": {"arguments": _A[6:]}}]}, model="gpt-5.1"),
        chat({"tool_calls": [{"index": 1, "function": {"arguments": _B[12:]}}]}, model="gpt-5.1"),
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

_FILE = _j({"path": "notes/todo.md", "content": "# TODO\n- ship the fresh set\n- score it\n"})
shape(
    "anthropic-fine-grained-tool-streaming",
    "feature",
    "anthropic",
    stream(
        a_start("claude-sonnet-4-5-20250929"),
        a_block(0, {"type": "tool_use", "id": "toolu_01Fr35hGrain", "name": "write_file", "input": {}}),
        *(a_json(0, _FILE[i : i + 5]) for i in range(0, len(_FILE), 5)),
        a_stop_block(0),
        *a_end("tool_use", 90),
    ),
    Expect(whole=True, tool_calls=1, tool_names=("write_file",)),
    "fine-grained tool streaming sends input_json_delta in small unaligned pieces; complete at tool_use: 1 call",
)

# Feature: Gemini ------------------------------------------------------------------------------------------

_VX = {"modelVersion": "gemini-2.5-pro", "responseId": "xD0VaberBfSanvgPoPLHkAU"}


def _vx(parts: list[dict[str, Any]], finish: str | None = None, **top: Any) -> bytes:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if finish:
        candidate["finishReason"] = finish
    return sse(
        {"candidates": [candidate], "createTime": "2025-11-13T02:09:08.087479Z", **_VX, **top}, crlf=True
    )


def _partial(path: str, value: str, more: bool) -> bytes:
    arg: dict[str, Any] = {"jsonPath": path, "stringValue": value}
    if more:
        arg["willContinue"] = True
    return _vx([{"functionCall": {"partialArgs": [arg], "willContinue": True}}])


shape(
    "gemini-streamed-function-call-arguments",
    "feature",
    "gemini",
    stream(
        _vx(
            [
                {
                    "functionCall": {"name": "getCurrentWeather", "willContinue": True},
                    "thoughtSignature": "CmAB4/H/Xj",
                }
            ]
        ),
        _partial("$.country", "USA", True),
        _partial("$.country", "", False),
        _partial("$.location", "NewYorkCity", True),
        _partial("$.location", "", False),
        _partial("$.purpose", "to know what to wear today", True),
        _partial("$.purpose", "", False),
        _partial("$.unit", "C", True),
        _partial("$.unit", "", False),
        _vx(
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


def _ol(message: dict[str, Any], done: bool = False, **extra: Any) -> bytes:
    body = {"model": "qwen3", "created_at": "2026-03-01T10:00:00.000000Z"}
    body["message"] = {"role": "assistant", "content": "", **message}
    return line({**body, "done": done, **extra})


shape(
    "ollama-native-thinking-then-tool-call",
    "feature",
    "ollama",
    _lines(
        _ol({"thinking": "The user wants the weather; "}),
        _ol({"thinking": "call get_weather."}),
        _ol({"tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}),
        _ol({}, True, done_reason="stop", total_duration=912_000_000, prompt_eval_count=42, eval_count=25),
    ),
    Expect(whole=True, tool_calls=1, tool_names=("get_weather",)),
    "Ollama's /api/chat streams thinking, then a whole tool call (arguments as an object), then done: 1 call",
)

shape(
    "ollama-native-parallel-tool-calls",
    "feature",
    "ollama",
    _lines(
        _ol(
            {
                "tool_calls": [
                    {"function": {"name": "get_temperature", "arguments": {"city": "New York"}}},
                    {"function": {"name": "get_conditions", "arguments": {"city": "New York"}}},
                ]
            }
        ),
        _ol({}, True, done_reason="stop", total_duration=1_204_000_000, prompt_eval_count=61, eval_count=38),
    ),
    Expect(whole=True, tool_calls=2, tool_names=("get_temperature", "get_conditions")),
    "Ollama's /api/chat returns parallel tool calls in one line's tool_calls array, then done: two calls",
)

# Feature: Bedrock ConverseStream ------------------------------------------------------------------------


def _cv(name: str, **body: Any) -> bytes:
    return converse_event(name, body)


_META: Final = {
    "usage": {"inputTokens": 30, "outputTokens": 40, "totalTokens": 70},
    "metrics": {"latencyMs": 812},
}

shape(
    "bedrock-converse-reasoning-then-text",
    "feature",
    "bedrock-converse",
    _lines(
        _cv("messageStart", role="assistant"),
        _cv(
            "contentBlockDelta",
            contentBlockIndex=0,
            delta={"reasoningContent": {"text": "Two trains meet when"}},
        ),
        _cv(
            "contentBlockDelta",
            contentBlockIndex=0,
            delta={"reasoningContent": {"signature": "ErcBCkgIAxAC"}},
        ),
        _cv("contentBlockStop", contentBlockIndex=0),
        _cv("contentBlockDelta", contentBlockIndex=1, delta={"text": "They meet after 2 hours."}),
        _cv("contentBlockStop", contentBlockIndex=1),
        _cv("messageStop", stopReason="end_turn"),
        _cv("metadata", **_META),
        head=BEDROCK,
    ),
    Expect(whole=True, text=True),
    "ConverseStream reasoningContent (text, then its signature), then text, end_turn: a whole answer",
)

shape(
    "bedrock-converse-tool-use-deltas",
    "feature",
    "bedrock-converse",
    _lines(
        _cv("messageStart", role="assistant"),
        _cv("contentBlockDelta", contentBlockIndex=0, delta={"text": "Let me look that up."}),
        _cv("contentBlockStop", contentBlockIndex=0),
        _cv(
            "contentBlockStart",
            contentBlockIndex=1,
            start={"toolUse": {"toolUseId": "tooluse_Fr35hQ", "name": "top_song"}},
        ),
        _cv("contentBlockDelta", contentBlockIndex=1, delta={"toolUse": {"input": '{"sign"'}}),
        _cv("contentBlockDelta", contentBlockIndex=1, delta={"toolUse": {"input": ': "WZPZ"}'}}),
        _cv("contentBlockStop", contentBlockIndex=1),
        _cv("messageStop", stopReason="tool_use"),
        _cv("metadata", **_META),
        head=BEDROCK,
    ),
    Expect(whole=True, text=True, tool_calls=1, tool_names=("top_song",)),
    "ConverseStream text, then a toolUse whose input arrives in deltas, stopReason tool_use: one call",
)

shape(
    "bedrock-converse-citations",
    "feature",
    "bedrock-converse",
    _lines(
        _cv("messageStart", role="assistant"),
        _cv("contentBlockDelta", contentBlockIndex=0, delta={"text": "The warranty lasts two years."}),
        _cv(
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
        _cv("contentBlockStop", contentBlockIndex=0),
        _cv("messageStop", stopReason="end_turn"),
        _cv("metadata", **_META),
        head=BEDROCK,
    ),
    Expect(whole=True, text=True),
    "ConverseStream citation deltas beside text (document citations): a whole answer",
)

# Feature faults: the same features, cut or stopped where a call is not complete ---------------------------


def _custom_tool_cut(r: Responses) -> tuple[Step, ...]:
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


shape(
    "responses-custom-tool-input-cut-incomplete",
    "feature",
    "openai-responses",
    _built(_custom_tool_cut),
    Expect(whole=False, tool_calls=0),
    "a freeform apply_patch input streams, then response.incomplete (max_output_tokens) before its done event:"
    " the patch is cut, never callable",
)

shape(
    "gemini-partial-args-end-mid-call",
    "feature",
    "gemini",
    stream(
        _vx(
            [
                {
                    "functionCall": {"name": "getCurrentWeather", "willContinue": True},
                    "thoughtSignature": "CmAB4/H/Xj",
                }
            ]
        ),
        _partial("$.country", "USA", True),
        _partial("$.country", "", False),
        _partial("$.location", "NewYork", True),
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
    _lines(
        _cv("messageStart", role="assistant"),
        _cv(
            "contentBlockStart",
            contentBlockIndex=0,
            start={"toolUse": {"toolUseId": "tooluse_Fr35hX", "name": "write_file"}},
        ),
        _cv(
            "contentBlockDelta",
            contentBlockIndex=0,
            delta={"toolUse": {"input": '{"path": "a.md", "content": "#'}},
        ),
        _cv("contentBlockStop", contentBlockIndex=0),
        _cv("messageStop", stopReason="max_tokens"),
        _cv("metadata", **_META),
        head=BEDROCK,
    ),
    Expect(whole=False, tool_calls=0, finish="length"),
    "ConverseStream stopReason max_tokens while a toolUse input streams: the input is cut, never callable",
)


def _parallel_cut(r: Responses) -> tuple[Step, ...]:
    a, b = _j({"city": "Paris"}), _j({"city": "London", "days": 3})
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


shape(
    "responses-parallel-second-call-cut",
    "feature",
    "openai-responses",
    _built(_parallel_cut),
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
    _lines(
        _cv("messageStart", role="assistant"),
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
    _lines(
        _ol({"content": "The first step is to"}),
        _ol({"content": " open the"}),
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
    _lines(
        _cv("messageStart", role="assistant"),
        _cv(
            "contentBlockStart",
            contentBlockIndex=0,
            start={"toolUse": {"toolUseId": "tooluse_Fr35hM", "name": "create_ticket"}},
        ),
        _cv(
            "contentBlockDelta", contentBlockIndex=0, delta={"toolUse": {"input": '{"title": "Login fails"}'}}
        ),
        _cv("contentBlockStop", contentBlockIndex=0),
        _cv("messageStop", stopReason="malformed_tool_use"),
        _cv("metadata", **_META),
        head=BEDROCK,
    ),
    Expect(whole=False, tool_calls=0),
    "stopReason malformed_tool_use after a toolUse block: the model's call is malformed: never callable",
)

shape(
    "bedrock-model-context-window-exceeded",
    "finish",
    "bedrock-converse",
    _lines(
        _cv("messageStart", role="assistant"),
        _cv("contentBlockDelta", contentBlockIndex=0, delta={"text": "The log shows repeated timeouts in"}),
        _cv("contentBlockStop", contentBlockIndex=0),
        _cv("messageStop", stopReason="model_context_window_exceeded"),
        _cv("metadata", **_META),
        head=BEDROCK,
    ),
    Expect(whole=False, verdicts=NOT_SAFE, text=True, finish="length"),
    "ConverseStream stopReason model_context_window_exceeded: cut by the context window, not whole",
)

shape(
    "bedrock-malformed-model-output",
    "finish",
    "bedrock-converse",
    _lines(
        _cv("messageStart", role="assistant"),
        _cv("contentBlockDelta", contentBlockIndex=0, delta={"text": "<|channel|>analysis"}),
        _cv("contentBlockStop", contentBlockIndex=0),
        _cv("messageStop", stopReason="malformed_model_output"),
        _cv("metadata", **_META),
        head=BEDROCK,
    ),
    Expect(whole=False, text=True),
    "ConverseStream stopReason malformed_model_output: the output could not be parsed: not a whole answer",
)

shape(
    "bedrock-content-filtered-after-text",
    "finish",
    "bedrock-converse",
    _lines(
        _cv("messageStart", role="assistant"),
        _cv("contentBlockDelta", contentBlockIndex=0, delta={"text": "The instructions for that"}),
        _cv("contentBlockStop", contentBlockIndex=0),
        _cv("messageStop", stopReason="content_filtered"),
        _cv(
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


def _unterminated(frame: bytes) -> bytes:
    """``frame`` without its closing blank line (its last line still ends)."""
    return frame[:-2] if frame.endswith(b"\r\n\r\n") else frame[:-1]


shape(
    "gemini-last-event-without-blank-line",
    "sse",
    "gemini",
    stream(
        g_chunk([{"text": "The capital of Australia"}]),
        _unterminated(g_chunk([{"text": " is Canberra."}], "STOP", usageMetadata=G_USAGE)),
    ),
    Expect(whole=True, text=True),
    "the last chunk (with finishReason STOP) ends its data line but the blank line never comes, then a clean"
    " end: google-genai dispatches it; the data is complete: a whole answer",
)

shape(
    "responses-completed-without-blank-line",
    "sse",
    "openai-responses",
    _built(
        lambda r: stream(
            *r.opening(),
            *_message(r, 0, "Done: ", "the file is saved."),
            _unterminated(r.ev("response.completed", response=r.response("completed"))),
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
        *(lambda end: [end[0], _unterminated(end[1])])(a_end("end_turn", 9)),
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
        _unterminated(chat({}, "stop", model="gpt-4.1-mini")),
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
