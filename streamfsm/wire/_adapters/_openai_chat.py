"""OpenAI Chat Completions (``/chat/completions``, ``stream: true``) and the many servers that copy it.

Wire: ``data: {chunk}`` lines, each ``{"id", "model", "choices": [{"index", "delta", "finish_reason"}],
"usage"}``; the usage chunk has ``choices: []`` (or ``null``); the stream ends with ``data: [DONE]``.

Judgement calls:

* Only choice 0 is followed (``n > 1`` streams interleave choices; the others are counted, not decoded).
* A chunk that carries nothing visible (role-only or empty deltas, a bare ``finish_reason``) yields one
  shared ``Metadata("chat.completion.chunk")``: it is seen and counted, and it is not progress.
* ``reasoning_content`` and ``reasoning`` in the same delta are one piece of reasoning (servers that send
  both send the same text): one ``ReasoningDelta``, from ``reasoning_content``; both keys are counted.
* The fields read are data (``EVENTS``: a decision per chunk, choice, delta and usage field, with its
  source; ``TOOLS``, ``FINISHES``): a delta or choice field with no decision there is unread content.
* Tool fragments are keyed by ``index`` (and ``id``). A fragment with a new index, or with a new ``id`` at
  the open index (servers that number every call 0), starts a call; the open one is closed first when its
  arguments already parse (sequential calls), else both stay open and the new one waits behind it (calls
  whose fragments interleave; ``_base``). A fragment for a call already closed is ``unknown_tool_call``, as
  are arguments for a call that never started. A ``custom`` tool call's input is raw text
  (``ToolInput.TEXT``), whole at a whole-answer finish; ``delta.function_call`` (the deprecated functions
  API) is one call at index 0.
* ``finish_reason`` is remembered (and recorded, whatever follows). ``[DONE]`` is terminal; so is a clean
  end of the body once every choice seen has its ``finish_reason``: several OpenAI-compatible servers
  (llama.cpp-style servers before they added it, some gateways) never send ``[DONE]``. That finish is noted
  as ``done_missing`` in ``anomalies`` (the record reports it). A clean end before a ``finish_reason``, or a
  cut (FIN or RST mid-body) after one, is still a broken stream.
* ``content`` is a string, or a list of typed parts (Mistral, Gemini's OpenAI-compatible API): text and
  refusal parts are read in order, Mistral's ``thinking`` parts as reasoning, image / audio / file /
  reference parts are known to carry no text (``_base.CONTENT_PARTS``). ``reasoning_details`` (OpenRouter)
  is read when no plain reasoning string came with it; an audio answer's ``transcript`` is its text.
  Anything else with a value (an unknown part type, a field not in ``_READ``, content of another shape, a
  choice field beside the delta not in ``_CHOICE_KEYS`` such as a legacy ``text``) is counted in
  ``delta_keys`` and noted as ``unread_content``: never dropped silently.
* An in-band error is an ``error`` object or string (at the top or inside the choice), or any shape
  ``_base.error_marker`` names: ``event: error``, ``"object": "error"`` (vLLM), ``"type": "error"``, a flat
  ``code`` + ``message``. Usage inside the choice is read as usage beside it.
* A ``finish_reason`` that reads as an error (``error`` from OpenRouter and other gateways, vLLM's ``abort``,
  GLM's ``network_error``, ...: ``classify.finish_error``) is the provider saying generation failed: an
  in-band provider error, from the chunk's ``error`` object when it has one. It does not complete the tool
  call whose arguments were streaming: that call never finished, and its tool never ran.
* A whole-answer ``finish_reason`` (``stop``, ``tool_calls``, ...) ends the open call at once; any other
  (``length``, a filter, a reason nobody here knows) leaves it open, and the run fails with it open.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from ...classify import finish_error, is_whole
from .._definitions import Definitions, Table, informational, read
from .._events import (
    FinishReason,
    Metadata,
    ProtocolViolation,
    ProviderErrorEvent,
    StreamEvent,
    ToolInput,
    Usage,
)
from .._sse import Frame
from ._base import (
    DONE_MISSING,
    REASONING,
    REFUSAL,
    UNEXPECTED_SHAPE,
    UNKNOWN_TOOL_CALL,
    UNREAD_CONTENT,
    Adapter,
    Frames,
    OpenCall,
    TextTemplate,
    as_arguments,
    as_count,
    as_dict,
    as_str,
    error_marker,
    raw_reason,
    read_parts,
)

_CHUNK: Final = Metadata("chat.completion.chunk")
_MAX_CHOICES: Final = 128
# The text of a content delta follows this in a compact chunk; a stream whose content deltas keep missing
# their template (a field that changes per chunk) is read the long way after this many templates.
_CONTENT_MARKER: Final = '"delta":{"content":'
_MAX_TEMPLATES: Final = 3
_FINISH: Final = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
}


_SDK: Final = "openai.types.chat.chat_completion_chunk"
_REF: Final = "https://platform.openai.com/docs/api-reference/chat-streaming"


def _chunk(name: str) -> str:
    return f"{_SDK}.ChatCompletionChunk.{name}"


def _choice(name: str) -> str:
    return f"{_SDK}.Choice.{name}"


def _delta_field(name: str) -> str:
    return f"{_SDK}.ChoiceDelta.{name}"


_NO_TEXT: Final = "carries no answer text"
# Chat events are untyped chunks: the decisions are per field, top-level (``<field>``), in a choice
# (``choice.<field>``), in its delta (``delta.<field>``) and in usage (``usage.<field>``). A delta or choice
# field with a value and no decision here is unread content.
EVENTS: Final[Table] = MappingProxyType(
    {
        "id": read(_chunk("id"), "the response id"),
        "model": read(_chunk("model"), "the model that answered"),
        "choices": read(_chunk("choices"), "the choices; only choice 0 is followed"),
        "usage": read(_chunk("usage"), "token usage (the last chunk, with stream_options.include_usage)"),
        "error": read(_REF, "an in-band error: an object, or a string said in words"),
        "object": informational(_chunk("object"), "chat.completion.chunk"),
        "created": informational(_chunk("created")),
        "service_tier": informational(_chunk("service_tier")),
        "system_fingerprint": informational(_chunk("system_fingerprint")),
        "obfuscation": informational(_chunk("obfuscation"), "padding against side channels"),
        "moderation": informational(_chunk("moderation"), "moderation results of a moderated completion"),
        "choice.index": read(_choice("index"), "which choice"),
        "choice.delta": read(_choice("delta"), "the choice's new content"),
        "choice.finish_reason": read(_choice("finish_reason"), "the finish (see finishes)"),
        "choice.logprobs": informational(_choice("logprobs"), _NO_TEXT),
        "choice.usage": read("Groq, some gateways", "usage sent inside the choice"),
        "choice.error": read("OpenRouter and gateways", "an error in the choice, an object or a string"),
        "choice.native_finish_reason": informational("OpenRouter", "the upstream provider's own reason"),
        "choice.stop_reason": informational("vLLM", "the stop string or token that ended it"),
        "choice.matched_stop": informational("SGLang", "the stop string or token that ended it"),
        "choice.content_filter_results": informational("Azure OpenAI", "filter results"),
        "delta.role": informational(_delta_field("role")),
        "delta.content": read(_delta_field("content"), "answer text, or a list of typed parts (see content)"),
        "delta.refusal": read(_delta_field("refusal"), "refusal text (visible)"),
        "delta.tool_calls": read(_delta_field("tool_calls"), "tool call fragments, by index and id"),
        "delta.function_call": read(_delta_field("function_call"), "the deprecated functions API's call"),
        "delta.audio": read(_delta_field("audio"), "an audio answer: its transcript is its text"),
        "delta.reasoning_content": read("DeepSeek, vLLM, Qwen, LiteLLM", "reasoning"),
        "delta.reasoning": read("OpenRouter, vLLM, Ollama's compatible API, Groq", "reasoning"),
        "delta.reasoning_details": read("OpenRouter", "typed reasoning, read when no plain string came"),
        "delta.thinking_blocks": informational("LiteLLM", "the same reasoning as reasoning_content"),
        "delta.annotations": informational("OpenAI web search", "url citations: about the text, not text"),
        "delta.images": informational("OpenRouter", "image output: " + _NO_TEXT),
        "delta.provider_specific_fields": informational("LiteLLM", "provider extras"),
        "delta.name": informational("OpenAI-compatible servers", "a speaker's name"),
        "usage.prompt_tokens": read("openai.types.completion_usage.CompletionUsage", "input tokens"),
        "usage.completion_tokens": read("openai.types.completion_usage.CompletionUsage", "output tokens"),
        "usage.total_tokens": read("openai.types.completion_usage.CompletionUsage", "the provider's total"),
        "usage.completion_tokens_details": read(
            "openai.types.completion_usage.CompletionUsage", "reasoning_tokens"
        ),
        "usage.prompt_tokens_details": read("openai.types.completion_usage.CompletionUsage", "cached_tokens"),
    }
)

CONTENT: Final[Table] = MappingProxyType(
    {
        "text": read("openai.types.chat.ChatCompletionContentPartText", "answer text"),
        "refusal": read("openai.types.chat.ChatCompletionContentPartRefusal", "refusal text"),
        "thinking": read("Mistral ThinkChunk", "reasoning"),
        "image_url": informational("openai.types.chat.ChatCompletionContentPartImage", _NO_TEXT),
        "input_audio": informational("openai.types.chat.ChatCompletionContentPartInputAudio", _NO_TEXT),
        "file": informational("openai.types.chat.chat_completion_content_part.File", _NO_TEXT),
        "document_url": informational("Mistral DocumentURLChunk", _NO_TEXT),
        "reference": informational("Mistral ReferenceChunk", "the ids of sources cited"),
    }
)

TOOLS: Final[Table] = MappingProxyType(
    {
        "function": read(
            "openai.types.chat.ChatCompletionMessageFunctionToolCall",
            "JSON arguments in fragments: complete when they parse at a whole-answer finish",
        ),
        "custom": read(
            "openai.types.chat.ChatCompletionMessageCustomToolCall",
            "raw text input in fragments: complete at a whole-answer finish",
        ),
    }
)

FINISHES: Final[Table] = MappingProxyType(
    {
        "stop": read(_choice("finish_reason"), "a whole answer"),
        "tool_calls": read(_choice("finish_reason"), "a whole answer: its calls are complete"),
        "function_call": read(_choice("finish_reason"), "the deprecated functions API: as tool_calls"),
        "length": read(_choice("finish_reason"), "the output limit: no whole answer"),
        "content_filter": read(_choice("finish_reason"), "a content filter: no whole answer"),
    }
)

DEFINITIONS: Final = Definitions(EVENTS, CONTENT, TOOLS, FINISHES)

# Delta fields read or known to carry no answer text; any other field with a value is UNREAD_CONTENT
# (its name is counted in delta_keys either way).
_READ: Final = frozenset(k[len("delta.") :] for k, d in EVENTS.items() if k.startswith("delta."))
# Choice fields beside ``delta``, the same way.
_CHOICE_KEYS: Final = frozenset(k[len("choice.") :] for k, d in EVENTS.items() if k.startswith("choice."))
# OpenRouter reasoning_details types and the field holding their text.
_REASONING_DETAILS: Final = {"reasoning.text": "text", "reasoning.summary": "summary"}


def _first_delta(payload: dict[str, Any]) -> dict[str, Any]:
    delta: dict[str, Any] = payload["choices"][0]["delta"]
    return delta


def chat_usage(usage: Mapping[str, Any]) -> Usage:
    completion = as_dict(usage.get("completion_tokens_details")) or {}
    prompt = as_dict(usage.get("prompt_tokens_details")) or {}
    return Usage(
        input_tokens=as_count(usage.get("prompt_tokens")),
        output_tokens=as_count(usage.get("completion_tokens")),
        reasoning_tokens=as_count(completion.get("reasoning_tokens")),
        cached_tokens=as_count(prompt.get("cached_tokens")),
        total_tokens=as_count(usage.get("total_tokens")),
    )


class OpenAIChatAdapter(Adapter):
    name = "openai-chat"
    whole_answers = frozenset(
        {
            "stop",  # OpenAI; vLLM, SGLang, TGI, llama.cpp server, Ollama /v1, LM Studio, Mistral, DeepSeek
            "tool_calls",  # OpenAI; the same servers (Ollama, vLLM, llama.cpp, Mistral, Moonshot, GLM)
            "function_call",  # OpenAI's deprecated functions API
            "eos_token",  # TGI's own FinishReason (end-of-sequence token), passed on by older chat routes
            "stop_sequence",  # TGI's own FinishReason (a stop sequence matched)
            "eos",  # LiteLLM's finish-reason set (end of sequence)
        }
    )

    __slots__ = ("_closed", "_started", "_template", "_templates", "_unfinished")

    def __init__(self) -> None:
        super().__init__()
        self._started = False
        # The stream's common chunk (one content delta and nothing else) as bytes apart from its text, once
        # one was read whole: later ones are read by their text alone (``TextTemplate``).
        self._template: TextTemplate | None = None
        self._templates = 0
        self._closed: dict[int, str] = {}  # index -> call id of calls already complete
        # choice indices seen without their finish_reason yet (None: too many to follow)
        self._unfinished: set[int] | None = set()

    def request(self, base_url: str, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        out = dict(body)
        out["stream"] = True
        options = out.get("stream_options")
        if options is None:
            out["stream_options"] = {"include_usage": True}
        elif isinstance(options, Mapping) and "include_usage" not in options:
            out["stream_options"] = {**options, "include_usage": True}
        return f"{base_url.rstrip('/')}/chat/completions", out

    def _on_data(self, event: Frame, data: str, index: int) -> list[StreamEvent]:
        template = self._template
        if template is not None and event.event == "message":
            text = template.text(data)
            if text is not None:
                return self._templated(text)
        if data == "[DONE]" or (data[-1] != "}" and data.strip() == "[DONE]"):
            return self._done()
        payload = self.load(data, index)
        if payload.get("error") is not None:
            return self.error(payload)
        if event.event != "message" or "choices" not in payload:  # every shape it names is one of these
            marker = error_marker(payload, event.event)
            if marker is not None:
                return self.error(payload, marker)
        out: list[StreamEvent] = []
        if not self._started:
            self._started = True
            self.seen(payload.get("id"), payload.get("model"))
            out.append(Metadata("chat.completion.chunk", self.response_id, self.model))
        common = False  # choice 0's delta was one piece of answer text and nothing else
        choices = payload.get("choices")
        if choices:
            if not isinstance(choices, list):
                raise ProtocolViolation(UNEXPECTED_SHAPE, index)
            for choice in choices:
                if type(choice) is not dict:
                    raise ProtocolViolation(UNEXPECTED_SHAPE, index)
                position = choice.get("index")
                position = position if type(position) is int else 0
                finish = choice.get("finish_reason")
                self._follow(position, isinstance(finish, str))
                if position != 0:
                    self.note("extra_choice")
                    continue
                if isinstance(finish, str) and finish_error(finish) is not None:
                    return self._error_finish(payload, choice, finish)
                error = choice.get("error")
                if (type(error) is dict or isinstance(error, str)) and error:
                    # An error in the choice (an object, or words), whatever its finish_reason: it is one.
                    return self.error({"error": error}, "choice.error")
                delta = choice.get("delta")
                if delta:
                    if type(delta) is not dict:
                        raise ProtocolViolation(UNEXPECTED_SHAPE, index)
                    common = self._delta(delta, out, index)
                if not _CHOICE_KEYS.issuperset(choice):
                    self.choice_extras(choice)
                if type(choice.get("usage")) is dict:
                    out.append(chat_usage(choice["usage"]))  # usage inside the choice (Groq, gateways)
                if isinstance(finish, str):
                    self._finish_reason(finish, out)
        usage = payload.get("usage")
        if type(usage) is dict:
            out.append(chat_usage(usage))
        elif common and self._templates < _MAX_TEMPLATES and type(choices) is list and len(choices) == 1:
            self._remember(event, data, payload, choices[0])
        if not out:
            out.append(_CHUNK)
        return out

    def _remember(self, event: Frame, data: str, payload: dict[str, Any], choice: dict[str, Any]) -> None:
        """A chunk read whole as one content delta alone: its template, when every other field of it is one
        that ``_templated`` may take as read (no finish, no usage, no field beside the delta unread)."""
        if (
            event.event == "message"
            and not isinstance(choice.get("finish_reason"), str)
            and type(choice.get("usage")) is not dict
            and _CHOICE_KEYS.issuperset(choice)
        ):
            self._templates += 1
            self._template = TextTemplate.of(data, payload, _CONTENT_MARKER, _first_delta, "content")

    def _templated(self, text: str) -> list[StreamEvent]:
        """A chunk that is the template with another text: what ``_on_data`` makes of such a chunk (the
        delta's key counted, choice 0 followed, the open calls closed before text), without the parse."""
        keys = self.delta_keys
        if "content" in keys:
            keys["content"] += 1
        else:
            self.count_key("content")
        unfinished = self._unfinished
        if unfinished is not None and 0 not in unfinished:
            self._follow(0, False)
        if self._call is not None:
            out: list[StreamEvent] = []
            self.close_calls(out)
            out.append(self.text_delta(text))
            return out
        return [self.text_delta(text)]

    def _delta(self, delta: dict[str, Any], out: list[StreamEvent], index: int) -> bool:
        """Read choice 0's delta into ``out``; True when it was one piece of answer text and nothing else."""
        keys = self.delta_keys
        unknown = False
        for key, value in delta.items():
            if value is not None and value != "" and value != [] and value != {}:
                if key in keys:
                    keys[key] += 1
                else:
                    self.count_key(key)
                if key not in _READ:
                    unknown = True
        if len(delta) == 1:  # the common chunk: one piece of answer text and nothing else
            content = delta.get("content")
            if content and type(content) is str:
                if self._call is not None:
                    self.close_calls(out)
                out.append(self.text_delta(content))
                return True
        if unknown:
            self.note(UNREAD_CONTENT)  # a field this adapter does not read; its name is in delta_keys
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning and isinstance(reasoning, str):
            self._emit(out, self.reasoning_delta(reasoning))
        elif delta.get("reasoning_details"):
            self._reasoning_details(delta["reasoning_details"], out)
        elif reasoning:
            self.note(UNREAD_CONTENT)  # reasoning that is not a string
        refusal = delta.get("refusal")
        if refusal and isinstance(refusal, str):
            self._emit(out, self.text_delta(refusal, refusal=True))
        content = delta.get("content")
        if content and isinstance(content, str):
            self._emit(out, self.text_delta(content))
        elif isinstance(content, list):
            for carrier, text in read_parts(content, self.note, self.count_key):
                piece = (
                    self.reasoning_delta(text)
                    if carrier == REASONING
                    else self.text_delta(text, carrier == REFUSAL)
                )
                self._emit(out, piece)
        elif content is not None and content != "":
            self.note(UNREAD_CONTENT)  # content that is neither a string nor a list of parts
        audio = delta.get("audio")
        if audio:
            transcript = audio.get("transcript") if type(audio) is dict else None
            if transcript and isinstance(transcript, str):
                self._emit(out, self.text_delta(transcript))
            elif type(audio) is not dict:
                self.note(UNREAD_CONTENT)
        legacy = delta.get("function_call")
        if legacy:  # the deprecated functions API: one call, its fragments without index or id
            if type(legacy) is not dict:
                raise ProtocolViolation(UNEXPECTED_SHAPE, index)
            self._fragment({"index": 0, "function": legacy}, out, index)
        fragments = delta.get("tool_calls")
        if fragments:
            if not isinstance(fragments, list):
                raise ProtocolViolation(UNEXPECTED_SHAPE, index)
            for fragment in fragments:
                if type(fragment) is not dict:
                    raise ProtocolViolation(UNEXPECTED_SHAPE, index)
                self._fragment(fragment, out, index)
        return False

    def choice_extras(self, choice: Mapping[str, Any]) -> None:
        """Choice fields beside the delta that this adapter does not read (a legacy ``text``, a whole
        ``message``): evidence, under ``choice.<name>``."""
        for key, value in choice.items():
            if key not in _CHOICE_KEYS and value is not None and value != "" and value != [] and value != {}:
                self.unread(f"choice.{key}")

    def _emit(self, out: list[StreamEvent], event: StreamEvent) -> None:
        if self._call is not None:
            self.close_calls(out)
        out.append(event)

    def _reasoning_details(self, details: object, out: list[StreamEvent]) -> None:
        """OpenRouter's structured reasoning, read only when no plain reasoning string came with it (it sends
        both, with the same text)."""
        if not isinstance(details, list):
            self.note(UNREAD_CONTENT)
            return
        for detail in details:
            kind = detail.get("type") if type(detail) is dict else None
            field_name = _REASONING_DETAILS.get(kind) if isinstance(kind, str) else None
            if field_name is None:
                if kind != "reasoning.encrypted":  # encrypted reasoning has nothing to read, by design
                    self.unread("reasoning_details.other")
                continue
            text = detail.get(field_name)
            if text and isinstance(text, str):
                self._emit(out, self.reasoning_delta(text, field_name == "summary"))

    def _fragment(self, fragment: dict[str, Any], out: list[StreamEvent], index: int) -> None:
        position = fragment.get("index")
        if type(position) is not int:
            position = None
        # An empty (or blank) id or name on a continuation says nothing: the open call goes on.
        call_id = (as_str(fragment.get("id")) or "").strip() or None
        custom = as_dict(fragment.get("custom"))
        if fragment.get("type") == "custom" or (custom is not None and fragment.get("function") is None):
            grammar, body = ToolInput.TEXT, custom or {}
            text = as_str(body.get("input"))  # raw text, not JSON
        else:
            grammar, body = ToolInput.JSON, as_dict(fragment.get("function")) or {}
            text = as_arguments(body.get("arguments"))
        name = (as_str(body.get("name")) or "").strip() or None
        call = self._open_at(position, call_id)
        if call is not None:
            if name and not call.name:
                call.name = name
                self.remember_tool(call.call_id, name)
            if text:
                self.add_input(out, call, text)
            return
        calls = self.open_calls()
        if position is None:
            position = calls[-1].index + 1 if calls else len(self._closed)
        closed_id = self._closed.get(position)
        if (call_id is None and name is None) or (closed_id is not None and call_id in (None, closed_id)):
            raise ProtocolViolation(UNKNOWN_TOOL_CALL, index)
        front = self._call
        if front is not None and not self._queued and front.parts and front.complete():
            self.close_call(out)  # sequential calls: the next one's start ends the one before
        new = OpenCall(position, call_id or self.next_call_id(), name or "", position, grammar=grammar)
        self.open_call(out, new, text, parallel=True)  # interleaved calls: it waits its turn

    def _open_at(self, position: int | None, call_id: str | None) -> OpenCall | None:
        """The open call a fragment continues: at its index (any, when it sends none) and with its id (any,
        when it sends none), the latest opened first."""
        for call in reversed(self.open_calls()):
            if (position is None or position == call.index) and (call_id is None or call_id == call.call_id):
                return call
        return None

    def closed(self, call: OpenCall) -> None:
        self._closed[call.index] = call.call_id

    def _follow(self, position: int, finished: bool) -> None:
        unfinished = self._unfinished
        if unfinished is None:
            return
        if finished:
            unfinished.discard(position)
        elif len(unfinished) < _MAX_CHOICES:
            unfinished.add(position)
        else:
            self._unfinished = None  # more choices than we follow: a missing [DONE] cannot be excused

    def _finish_reason(self, finish: str, out: list[StreamEvent]) -> None:
        """A finish_reason arrived (the terminal event is [DONE], or a clean end): a whole answer ends the
        open call now; any other reason leaves it open (see ``Adapter.finish``)."""
        self.finish_raw = raw_reason(finish)
        if is_whole(self.whole_answers, finish):
            for call in self.open_calls():
                if call.grammar is ToolInput.TEXT:
                    self.end_input(out, call)  # a freeform input has no end of its own here
            self.close_calls(out)

    def _error_finish(
        self, payload: dict[str, Any], choice: dict[str, Any], finish: str
    ) -> list[StreamEvent]:
        self.finish_raw = raw_reason(finish)
        for holder in (payload, choice):
            if as_dict(holder.get("error")) is not None:
                return self.error({"error": holder["error"]})
        error = finish_error(finish)
        assert error is not None  # the caller checked
        self.terminal_seen = self._errored = True
        return [ProviderErrorEvent(error)]

    def end(self) -> list[StreamEvent]:
        # A clean end of the body after every choice finished: the answer is whole, only [DONE] is missing.
        if self.terminal_seen or self.finish_raw is None or self._unfinished != set():
            return []
        self.note(DONE_MISSING)
        return self._done()

    def _done(self) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        raw = self.finish_raw
        self.finish(out, _FINISH.get(raw, FinishReason.OTHER) if raw else FinishReason.OTHER, raw)
        return out


# -- a whole (non-streaming) answer as the frames of its stream ---------------------------------------------


def answer_frames(answer: dict[str, Any]) -> Frames | None:
    """A chat completion: each choice's ``message`` as one delta, then its ``finish_reason``, the usage, and
    ``[DONE]``."""
    choices = answer.get("choices")
    if not isinstance(choices, list):
        return None
    head: dict[str, Any] = {key: answer[key] for key in ("id", "model") if key in answer}
    deltas: Frames = []
    finishes: Frames = []
    for position, choice in enumerate(choices):
        if type(choice) is not dict:
            return None
        index = choice.get("index", position)
        message = choice.get("message")
        if type(message) is dict and isinstance(message.get("tool_calls"), list):
            calls = [
                {"index": n, **call} if type(call) is dict and "index" not in call else call
                for n, call in enumerate(message["tool_calls"])
            ]
            message = {**message, "tool_calls": calls}
        rest = {key: value for key, value in choice.items() if key not in ("message", "finish_reason")}
        deltas.append(
            {**head, "choices": [{**rest, "index": index, "delta": message, "finish_reason": None}]}
        )
        finish = {"index": index, "delta": {}, "finish_reason": choice.get("finish_reason")}
        finishes.append({**head, "choices": [finish]})
    usage = {"usage": answer["usage"]} if type(answer.get("usage")) is dict else {}
    return [*deltas, *finishes, {**head, "choices": [], **usage}, "[DONE]"]
