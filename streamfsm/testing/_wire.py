"""Realistic wire streams for every registered format, as lists of frames (each format's builders are
registered as its kit, ``_kits.py``).

Each frame is one complete event as bytes (an SSE event, blank line included; an NDJSON line; an AWS
event-stream message), so a test server or a fault provider can send them one by one and cut anywhere (between
frames, or inside one with ``frame[:n]``). Shapes follow what the providers send: ids, ``created``, ``model``,
``sequence_number``, the bookkeeping events, the usage chunk, ``[DONE]``; Gemini frames use CRLF line ends, as
Google's servers do.

A stream is built from parts, in order::

    ("reasoning", text)  ("text", text)  ("refusal", text)  ("tool", name, arguments_json)

``build(fmt, parts)`` is the general builder; ``text_stream`` and ``tool_call_stream`` are the common cases.
Usage, when included, is always ``PROMPT_TOKENS`` in (``CACHED_TOKENS`` of them cached) and
``OUTPUT_TOKENS`` out (``REASONING_TOKENS`` of them reasoning when the stream has reasoning).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal, TypeAlias, cast

from ..wire import FORMATS as WIRE
from ..wire import EventStreamDecoder, NDJSONDecoder, SSEDecoder
from ._eventstream import converse, from_sse
from ._kit import kit_of

Format: TypeAlias = Literal[
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "ollama",
    "anthropic-bedrock",
    "bedrock-converse",
]


def _named(framing: object) -> tuple[Format, ...]:
    """The registered formats framed by ``framing`` (None: every one), in the registry's order."""
    return tuple(cast(Format, name) for name, fmt in WIRE.items() if framing in (None, fmt.framing))


SSE_FORMATS: Final = _named(SSEDecoder)
"""Formats streamed as SSE events."""
NDJSON_FORMATS: Final = _named(NDJSONDecoder)
"""Formats streamed as NDJSON lines, not SSE events: each frame is one line (``\\n`` included)."""
EVENT_STREAM_FORMATS: Final = _named(EventStreamDecoder)
"""Formats streamed as AWS event-stream messages (Bedrock): each frame is one message, both CRCs included."""
WIRE_FORMATS: Final = _named(None)
"""Every format the fault provider speaks (each registered ``Format``)."""
Part: TypeAlias = tuple[str, ...]  # ("text", s), ("reasoning", s), ("refusal", s), ("tool", name, args)
ErrorKind: TypeAlias = Literal["overloaded", "rate_limit", "server_error", "context_overflow"]

PROMPT_TOKENS: Final = 25
CACHED_TOKENS: Final = 5
OUTPUT_TOKENS: Final = 40
REASONING_TOKENS: Final = 8

CREATED: Final = 1_730_000_000
CHAT_MODEL: Final = "gpt-4o-mini-2024-07-18"
CHAT_ID: Final = "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG"
RESPONSES_MODEL: Final = "gpt-5-mini-2025-08-07"
RESPONSES_ID: Final = "resp_68af4030592c81938ec0a5fbab4a3e9f"
ANTHROPIC_MODEL: Final = "claude-sonnet-4-5-20250929"
ANTHROPIC_ID: Final = "msg_01XFDUDYJgAACzvnptvVoYEL"
GEMINI_MODEL: Final = "gemini-2.5-flash"
GEMINI_ID: Final = "1e4bs8KpCJmJz7IP8tuR0Qo"
OLLAMA_MODEL: Final = "llama3.2"
ARGUMENT_PIECE: Final = 12  # characters of tool arguments per delta


def _dumps(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def frame(data: object, event: str | None = None, *, crlf: bool = False) -> bytes:
    """One SSE event. ``data`` is JSON-encoded unless it is already a string."""
    text = data if isinstance(data, str) else _dumps(data)
    lines = ([f"event: {event}"] if event else []) + [f"data: {line}" for line in text.split("\n")]
    end = "\r\n" if crlf else "\n"
    return (end.join(lines) + end + end).encode()


def comment(text: str = "keepalive") -> bytes:
    return f": {text}\n\n".encode()


def keepalive(fmt: Format) -> bytes:
    """What the format sends to keep a connection warm (its kit's: Anthropic's ``ping`` event, else an SSE
    comment)."""
    return kit_of(fmt).keepalive


def _pieces(text: str, size: int = ARGUMENT_PIECE) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _usage_numbers(parts: Sequence[Part]) -> tuple[int, int, int, int]:
    reasoning = REASONING_TOKENS if any(p[0] == "reasoning" for p in parts) else 0
    return PROMPT_TOKENS, CACHED_TOKENS, OUTPUT_TOKENS, reasoning


# -- OpenAI Chat Completions ---------------------------------------------------------------------------------


def chat_stream(
    parts: Sequence[Part], usage: bool, finish: str | None, reasoning_key: str, **_: Any
) -> list[bytes]:
    base = {
        "id": CHAT_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": CHAT_MODEL,
        "system_fingerprint": "fp_560af6e559",
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return frame({**base, "choices": [choice], "usage": None} if usage else {**base, "choices": [choice]})

    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    calls = 0
    for part in parts:
        kind = part[0]
        if kind == "tool":
            first = {"index": calls, "id": f"call_{calls:02d}qJ7x", "type": "function"}
            out.append(chunk({"tool_calls": [{**first, "function": {"name": part[1], "arguments": ""}}]}))
            for piece in _pieces(part[2]):
                out.append(chunk({"tool_calls": [{"index": calls, "function": {"arguments": piece}}]}))
            calls += 1
        else:
            key = {"text": "content", "refusal": "refusal", "reasoning": reasoning_key}[kind]
            out.append(chunk({key: part[1]}))
    out.append(chunk({}, finish or ("tool_calls" if calls else "stop")))
    if usage:
        prompt, cached, output, reasoning = _usage_numbers(parts)
        numbers = {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": reasoning, "audio_tokens": 0},
        }
        out.append(frame({**base, "choices": [], "usage": numbers}))
    out.append(frame("[DONE]"))
    return out


# -- OpenAI Responses ----------------------------------------------------------------------------------------


def responses_stream(
    parts: Sequence[Part], usage: bool, finish: str | None, background: bool = False, **_: Any
) -> list[bytes]:
    out: list[bytes] = []
    response: dict[str, Any] = {
        "id": RESPONSES_ID,
        "object": "response",
        "created_at": CREATED,
        "status": "in_progress",
        "model": RESPONSES_MODEL,
        "output": [],
        "usage": None,
    }

    def emit(kind: str, **fields: Any) -> None:
        out.append(frame({"type": kind, "sequence_number": len(out), **fields}, kind))

    if background:  # the background guide: created and queued, then the ordinary stream
        emit("response.created", response={**response, "status": "queued"})
        emit("response.queued", response={**response, "status": "queued"})
    else:
        emit("response.created", response=response)
    emit("response.in_progress", response=response)
    index = -1
    open_item: str | None = None  # the message or reasoning item text is being added to

    def close_item() -> None:
        nonlocal open_item
        if open_item is None:
            return
        item_id, kind = open_item.split(":")
        if kind == "reasoning":
            emit("response.reasoning_summary_text.done", item_id=item_id, output_index=index, summary_index=0)
            emit("response.reasoning_summary_part.done", item_id=item_id, output_index=index, summary_index=0)
            emit("response.output_item.done", output_index=index, item={"id": item_id, "type": "reasoning"})
        else:
            part_type = "refusal" if kind == "refusal" else "output_text"
            emit(f"response.{part_type}.done", item_id=item_id, output_index=index, content_index=0)
            emit("response.content_part.done", item_id=item_id, output_index=index, content_index=0)
            item = {"id": item_id, "type": "message", "status": "completed", "role": "assistant"}
            emit("response.output_item.done", output_index=index, item=item)
        open_item = None

    saw_calls = False
    for n, part in enumerate(parts):
        kind = part[0]
        if kind == "tool":
            close_item()
            saw_calls = True
            index += 1
            item_id, call_id = f"fc_{n:02d}68af40", f"call_{n:02d}Xz9"
            item = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": ""}
            item |= {"call_id": call_id, "name": part[1]}
            done = item | {"status": "completed", "arguments": part[2]}
            emit("response.output_item.added", output_index=index, item=item)
            for piece in _pieces(part[2]):
                emit(
                    "response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece
                )
            emit(
                "response.function_call_arguments.done",
                item_id=item_id,
                output_index=index,
                arguments=part[2],
            )
            emit("response.output_item.done", output_index=index, item=done)
            continue
        wanted = "reasoning" if kind == "reasoning" else kind
        if open_item is None or not open_item.endswith(":" + wanted):
            close_item()
            index += 1
            if kind == "reasoning":
                item_id = f"rs_{n:02d}68af40"
                emit(
                    "response.output_item.added",
                    output_index=index,
                    item={"id": item_id, "type": "reasoning"},
                )
                emit(
                    "response.reasoning_summary_part.added",
                    item_id=item_id,
                    output_index=index,
                    summary_index=0,
                    part={"type": "summary_text", "text": ""},
                )
            else:
                item_id = f"msg_{n:02d}68af40"
                item = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant"}
                emit("response.output_item.added", output_index=index, item=item | {"content": []})
                part_body = (
                    {"type": "refusal", "refusal": ""}
                    if kind == "refusal"
                    else {
                        "type": "output_text",
                        "text": "",
                        "annotations": [],
                    }
                )
                emit(
                    "response.content_part.added",
                    item_id=item_id,
                    output_index=index,
                    content_index=0,
                    part=part_body,
                )
            open_item = f"{item_id}:{wanted}"
        item_id = open_item.split(":")[0]
        if kind == "reasoning":
            emit(
                "response.reasoning_summary_text.delta",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                delta=part[1],
            )
        elif kind == "refusal":
            emit(
                "response.refusal.delta", item_id=item_id, output_index=index, content_index=0, delta=part[1]
            )
        else:
            emit(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=part[1],
                logprobs=[],
            )
    close_item()
    final = {**response, "status": "incomplete" if finish else "completed"}
    if usage:
        prompt, cached, output, reasoning = _usage_numbers(parts)
        final["usage"] = {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": prompt + output,
        }
    if finish:
        final["incomplete_details"] = {"reason": finish}
        emit("response.incomplete", response=final)
    else:
        final["parallel_tool_calls"] = saw_calls
        emit("response.completed", response=final)
    return out


# -- Anthropic Messages --------------------------------------------------------------------------------------


def anthropic_stream(parts: Sequence[Part], usage: bool, finish: str | None, **_: Any) -> list[bytes]:
    def emit(data: dict[str, Any]) -> None:
        out.append(frame(data, data["type"]))

    out: list[bytes] = []
    prompt, cached, output, _reasoning = _usage_numbers(parts)
    start_usage = {
        "input_tokens": prompt - cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
        "output_tokens": 1,
    }
    message: dict[str, Any] = {
        "id": ANTHROPIC_ID,
        "type": "message",
        "role": "assistant",
        "model": ANTHROPIC_MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage if usage else {},
    }
    emit({"type": "message_start", "message": message})
    block = -1
    open_kind: str | None = None

    def close_block() -> None:
        nonlocal open_kind
        if open_kind is None:
            return
        if open_kind == "thinking":
            delta = {
                "type": "signature_delta",
                "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk",
            }
            emit({"type": "content_block_delta", "index": block, "delta": delta})
        emit({"type": "content_block_stop", "index": block})
        open_kind = None

    saw_calls = False
    for n, part in enumerate(parts):
        kind = "text" if part[0] == "refusal" else part[0]
        if kind == "tool":
            close_block()
            saw_calls = True
            block += 1
            start = {"type": "tool_use", "id": f"toolu_{n:02d}01A09q90qw", "name": part[1], "input": {}}
            emit({"type": "content_block_start", "index": block, "content_block": start})
            emit(
                {
                    "type": "content_block_delta",
                    "index": block,
                    "delta": {"type": "input_json_delta", "partial_json": ""},
                }
            )
            for piece in _pieces(part[2]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                emit({"type": "content_block_delta", "index": block, "delta": delta})
            emit({"type": "content_block_stop", "index": block})
            continue
        if open_kind != kind:
            close_block()
            block += 1
            start = (
                {"type": "thinking", "thinking": ""} if kind == "reasoning" else {"type": "text", "text": ""}
            )
            emit({"type": "content_block_start", "index": block, "content_block": start})
            if block == 0:
                emit({"type": "ping"})
            open_kind = "thinking" if kind == "reasoning" else kind
        if kind == "reasoning":
            delta = {"type": "thinking_delta", "thinking": part[1]}
        else:
            delta = {"type": "text_delta", "text": part[1]}
        emit({"type": "content_block_delta", "index": block, "delta": delta})
    close_block()
    reason = finish or (
        "tool_use" if saw_calls else "refusal" if parts and parts[-1][0] == "refusal" else "end_turn"
    )
    delta_message: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
    }
    if usage:
        delta_message["usage"] = {"output_tokens": output}
    emit(delta_message)
    emit({"type": "message_stop"})
    return out


# -- Gemini --------------------------------------------------------------------------------------------------


def gemini_stream(
    parts: Sequence[Part], usage: bool, finish: str | None, parallel: bool, **_: Any
) -> list[bytes]:
    def chunk(wire_parts: list[dict[str, Any]], last: bool = False) -> bytes:
        candidate: dict[str, Any] = {"content": {"parts": wire_parts, "role": "model"}, "index": 0}
        body: dict[str, Any] = {"candidates": [candidate]}
        if last:
            candidate["finishReason"] = finish or "STOP"
            if usage:
                prompt, cached, output, reasoning = _usage_numbers(parts)
                body["usageMetadata"] = {
                    "promptTokenCount": prompt,
                    "candidatesTokenCount": output - reasoning,
                    "totalTokenCount": prompt + output,
                    "cachedContentTokenCount": cached,
                    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
                } | ({"thoughtsTokenCount": reasoning} if reasoning else {})
        body["modelVersion"] = GEMINI_MODEL
        body["responseId"] = GEMINI_ID
        return frame(body, crlf=True)

    groups: list[list[dict[str, Any]]] = []
    signed = False
    for part in parts:
        if part[0] == "tool":
            call: dict[str, Any] = {"functionCall": {"name": part[1], "args": json.loads(part[2] or "{}")}}
            if not signed:
                call["thoughtSignature"] = "CiIBVKhc7oDPpCaXyJKKssjqr4hmExxq5ZXmXsvxLNdVgvVL"
                signed = True
            if parallel and groups and "functionCall" in groups[-1][-1]:
                groups[-1].append(call)  # parallel calls arrive together, in one chunk
            else:
                groups.append([call])
        elif part[0] == "reasoning":
            groups.append([{"text": part[1], "thought": True}])
        else:
            groups.append([{"text": part[1]}])
    if not groups:
        groups.append([{"text": ""}])
    return [chunk(group, last=i == len(groups) - 1) for i, group in enumerate(groups)]


# -- Ollama (/api/chat, /api/generate: NDJSON) ---------------------------------------------------------------

OLLAMA_CREATED: Final = "2025-10-01T12:00:00.000000Z"


def line(data: object) -> bytes:
    """One NDJSON line. ``data`` is JSON-encoded unless it is already a string."""
    return (data if isinstance(data, str) else _dumps(data)).encode() + b"\n"


def ollama_stream(
    parts: Sequence[Part], usage: bool, finish: str | None, generate: bool = False, **_: Any
) -> list[bytes]:
    """Chat lines carry ``message`` (content, thinking, tool_calls with arguments as an object); generate
    lines carry ``response`` and ``thinking``. The last line: ``done: true``, ``done_reason``, the counts."""
    head = {"model": OLLAMA_MODEL, "created_at": OLLAMA_CREATED}

    def piece(body: dict[str, Any], done: bool = False) -> dict[str, Any]:
        if generate:
            return {
                **head,
                "response": body.get("content", ""),
                **({"thinking": body["thinking"]} if "thinking" in body else {}),
                "done": done,
            }
        return {**head, "message": {"role": "assistant", "content": "", **body}, "done": done}

    lines: list[bytes] = []
    for part in parts:
        if part[0] == "tool":
            try:
                arguments: Any = json.loads(part[2])
            except ValueError:
                arguments = part[2]  # not JSON: sent as the string it is
            call = {
                "id": f"call_{len(lines)}",
                "function": {"index": 0, "name": part[1], "arguments": arguments},
            }
            lines.append(line(piece({"tool_calls": [call]})))
        elif part[0] == "reasoning":
            lines.append(line(piece({"thinking": part[1]})))
        else:
            lines.append(line(piece({"content": part[1]})))
    last = piece({}, done=True)
    last["done_reason"] = finish or "stop"
    last.update(total_duration=5_043_500_667, load_duration=5_025_959)
    if usage:
        last.update(prompt_eval_count=PROMPT_TOKENS, prompt_eval_duration=325_953_000)
        last.update(eval_count=OUTPUT_TOKENS, eval_duration=4_709_213_000)
    if generate:
        last["context"] = [1, 2, 3]
    lines.append(line(last))
    return lines


def anthropic_bedrock_stream(parts: Sequence[Part], usage: bool, finish: str | None, **_: Any) -> list[bytes]:
    """The Anthropic stream, each event in the AWS event-stream message Bedrock sends it in."""
    return from_sse(anthropic_stream(parts, usage, finish))


def bedrock_converse_stream(parts: Sequence[Part], usage: bool, finish: str | None, **_: Any) -> list[bytes]:
    """Bedrock ConverseStream: each event its own AWS event-stream message."""
    prompt, cached, output, _reasoning = _usage_numbers(parts)
    return converse(parts, (prompt, cached, output) if usage else None, finish)


def build(
    fmt: Format,
    parts: Iterable[Part],
    *,
    usage: bool = True,
    finish: str | None = None,
    parallel: bool = True,
    reasoning_key: str = "reasoning_content",
    background: bool = False,
    generate: bool = False,
) -> list[bytes]:
    """A whole stream of ``parts``, ending with the format's terminal event (Ollama: its ``done`` line).

    ``finish`` overrides the raw finish reason (chat ``finish_reason``, Anthropic ``stop_reason``, Gemini
    ``finishReason``; for Responses it ends with ``response.incomplete`` and that reason). ``parallel``:
    Gemini sends adjacent function calls in one chunk (the streamed formats always serialise calls).
    ``reasoning_key``: chat's reasoning field, ``reasoning_content`` or ``reasoning``. ``background``
    (Responses): a background request's stream, ``response.queued`` before the work starts. ``generate``
    (Ollama): ``/api/generate`` lines instead of ``/api/chat``.
    """
    if fmt not in WIRE:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(WIRE)}")
    return kit_of(fmt).stream(
        list(parts),
        usage=usage,
        finish=finish,
        parallel=parallel,
        reasoning_key=reasoning_key,
        background=background,
        generate=generate,
    )


def text_stream(
    fmt: Format, texts: Iterable[str], *, reasoning: Iterable[str] = (), usage: bool = True, **options: Any
) -> list[bytes]:
    """Reasoning deltas (if any), then text deltas, then the terminal event."""
    parts: list[Part] = [("reasoning", r) for r in reasoning]
    parts += [("text", t) for t in texts]
    return build(fmt, parts, usage=usage, **options)


def refusal_stream(fmt: Format, texts: Iterable[str], *, usage: bool = True) -> list[bytes]:
    return build(fmt, [("refusal", t) for t in texts], usage=usage)


def tool_call_stream(
    fmt: Format,
    calls: Iterable[tuple[str, str]],
    *,
    text: Iterable[str] = (),
    reasoning: Iterable[str] = (),
    parallel: bool = True,
    usage: bool = True,
) -> list[bytes]:
    """Reasoning, text, then the tool calls ``(name, arguments_json)`` of one turn."""
    parts: list[Part] = [("reasoning", r) for r in reasoning]
    parts += [("text", t) for t in text]
    parts += [("tool", name, arguments) for name, arguments in calls]
    return build(fmt, parts, parallel=parallel, usage=usage)


_OPENAI_ERRORS: Final[dict[str, tuple[str, str, str]]] = {  # kind: (type, code, message)
    "overloaded": ("server_error", "server_is_overloaded", "The server is overloaded. Please retry."),
    "rate_limit": ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    "server_error": ("server_error", "server_error", "The server had an error processing your request."),
    "context_overflow": (
        "invalid_request_error",
        "context_length_exceeded",
        "Your input exceeds the context window of this model.",
    ),
}
_ANTHROPIC_ERRORS: Final[dict[str, tuple[str, str]]] = {  # kind: (type, message)
    "overloaded": ("overloaded_error", "Overloaded"),
    "rate_limit": (
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
    ),
    "server_error": ("api_error", "Internal server error"),
    "context_overflow": ("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
}
_OLLAMA_ERRORS: Final[dict[str, str]] = {  # Ollama's errors are one string
    "overloaded": "server busy, please try again.  maximum pending requests exceeded",
    "rate_limit": "too many requests",
    "server_error": "an error was encountered while running the model: unexpected EOF",
    "context_overflow": "the input length exceeds the context length",
}
_GEMINI_ERRORS: Final[dict[str, tuple[int, str, str]]] = {  # kind: (code, status, message)
    "overloaded": (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
    "rate_limit": (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    "server_error": (500, "INTERNAL", "An internal error has occurred."),
    "context_overflow": (
        400,
        "INVALID_ARGUMENT",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    ),
}
ErrorShape: TypeAlias = Literal["flat", "nested", "failed"]


def error_event(
    fmt: Format,
    kind: ErrorKind = "overloaded",
    *,
    shape: ErrorShape = "nested",
    sequence_number: int | None = None,
) -> bytes:
    """One in-band error frame. For Responses, ``shape`` picks the flat ``error`` event, the nested one, or
    ``response.failed``; pass ``sequence_number`` past the frames sent before it (``len(frames)`` for a
    prefix of a built stream)."""
    error = kit_of(fmt).error if fmt in WIRE else None
    if error is None:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(SSE_FORMATS)}")
    return error(kind, shape, sequence_number)


def anthropic_error(kind: ErrorKind, shape: ErrorShape, sequence_number: int | None) -> bytes:
    error_type, message = _ANTHROPIC_ERRORS[kind]
    return frame({"type": "error", "error": {"type": error_type, "message": message}}, "error")


def ollama_error(kind: ErrorKind, shape: ErrorShape, sequence_number: int | None) -> bytes:
    return line({"error": _OLLAMA_ERRORS[kind]})


def gemini_error(kind: ErrorKind, shape: ErrorShape, sequence_number: int | None) -> bytes:
    code, status, message = _GEMINI_ERRORS[kind]
    return frame({"error": {"code": code, "message": message, "status": status}}, crlf=True)


def chat_error(kind: ErrorKind, shape: ErrorShape, sequence_number: int | None) -> bytes:
    error_type, code, message = _OPENAI_ERRORS[kind]
    return frame({"error": {"message": message, "type": error_type, "param": None, "code": code}})


def responses_error(kind: ErrorKind, shape: ErrorShape, sequence_number: int | None) -> bytes:
    error_type, code, message = _OPENAI_ERRORS[kind]
    numbered = {} if sequence_number is None else {"sequence_number": sequence_number}
    if shape == "flat":
        return frame({"type": "error", "code": code, "message": message, "param": None, **numbered}, "error")
    if shape == "nested":
        nested = {"type": error_type, "code": code, "message": message, "param": None}
        return frame({"type": "error", "error": nested, **numbered}, "error")
    response = {
        "id": RESPONSES_ID,
        "object": "response",
        "created_at": CREATED,
        "status": "failed",
        "model": RESPONSES_MODEL,
        "error": {"code": code, "message": message},
        "output": [],
        "usage": None,
    }
    return frame({"type": "response.failed", "response": response, **numbered}, "response.failed")


def __getattr__(name: str) -> object:
    """``MODELS`` and ``RESPONSE_IDS`` (format → what its kit's streams name), read from the kits."""
    if name in ("MODELS", "RESPONSE_IDS"):
        field = "model" if name == "MODELS" else "response_id"
        return {fmt: getattr(kit_of(fmt), field) for fmt in WIRE if getattr(kit_of(fmt), field) is not None}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
