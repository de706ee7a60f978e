"""The formats: one ``Format`` object per wire format, in one registry.

A format says everything the rest of the house needs to know about a provider's wire: how its streamed body
is framed, which adapter turns frames into events, how a request asks for a stream, what a whole
(non-streaming) answer looks like as the frames its stream would carry, how a request is rewritten to
continue a cut answer and its prefill rule, how to resume by the provider's cursor, how ``wrap()`` knows the
format's SDK streams, the request ``streamfsm probe`` sends and the header a key goes in, the OpenTelemetry
provider name, the paths the tap recognises it by, and where the test kit's builders for it are. The tap's
default rules, the OTel names, the whole-answer reader, the relay's in-band error and route keys, the HTTP
driver's resume, ``wrap()``'s detection, ``probe``, the test kit and the docs' pages per format are read from
here. Adding a format is one entry here, its adapter module and its scenarios (its kit among them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Protocol

from ._adapters import Adapter
from ._adapters._anthropic import DEFINITIONS as ANTHROPIC_DEFINITIONS
from ._adapters._anthropic import AnthropicAdapter
from ._adapters._anthropic import answer_frames as anthropic_answer
from ._adapters._anthropic_bedrock import DEFINITIONS as ANTHROPIC_BEDROCK_DEFINITIONS
from ._adapters._anthropic_bedrock import AnthropicBedrockAdapter
from ._adapters._base import AnswerFrames
from ._adapters._bedrock_converse import DEFINITIONS as CONVERSE_DEFINITIONS
from ._adapters._bedrock_converse import BedrockConverseAdapter, SdkBedrockConverse
from ._adapters._bedrock_converse import answer_frames as converse_answer
from ._adapters._continue import (
    Continuation,
    ContinueStyle,
    anthropic_continuation,
    chat_continuation,
    gemini_continuation,
    responses_continuation,
)
from ._adapters._gemini import DEFINITIONS as GEMINI_DEFINITIONS
from ._adapters._gemini import GeminiAdapter
from ._adapters._gemini import answer_frames as gemini_answer
from ._adapters._ollama import DEFINITIONS as OLLAMA_DEFINITIONS
from ._adapters._ollama import OllamaAdapter
from ._adapters._ollama import answer_frames as ollama_answer
from ._adapters._openai_chat import DEFINITIONS as CHAT_DEFINITIONS
from ._adapters._openai_chat import OpenAIChatAdapter
from ._adapters._openai_chat import answer_frames as chat_answer
from ._adapters._openai_responses import DEFINITIONS as RESPONSES_DEFINITIONS
from ._adapters._openai_responses import OpenAIResponsesAdapter
from ._adapters._openai_responses import OpenAIResponsesAdapter as _Responses
from ._adapters._openai_responses import answer_frames as responses_answer
from ._adapters._resume import refusal_of, resumable_request, resume_url
from ._adapters._sdk_items import SdkAnthropic, SdkOpenAIChat, SdkOpenAIResponses
from ._definitions import NO_DEFINITIONS, Definitions
from ._eventstream import CONTENT_TYPE as AWS_EVENT_STREAM
from ._eventstream import EventStreamDecoder, exception_message
from ._ndjson import NDJSONDecoder
from ._slots import KitName, Prefill, Probe, Resume, SdkSide
from ._sse import Frame, SSEDecoder

__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "Format",
    "Framing",
    "adapter_for",
    "continuation_body",
    "dropped_whitespace",
    "format_named",
    "style_for",
    "whole_answers_of",
]


class Framing(Protocol):
    """A streamed body's framing, per body: bytes in, the frames each chunk completed out (``Frame``: a
    frame's ``data`` is what its adapter reads). ``close()`` at the body's end returns what was pending and
    sets ``truncated`` when a frame was torn."""

    truncated: bool

    def feed(self, chunk: bytes) -> list[Frame]: ...

    def close(self) -> list[Frame]: ...


ContinuationRewrite = Callable[[Mapping[str, Any], Continuation, ContinueStyle], dict[str, Any]]
# A request body's top-level "stream" value as a look found it: the value, ABSENT (the body has none), or
# None (the body was too large to tell).
ABSENT: Final = object()


def _stream_flag_true(path: str, flag: object) -> bool | None:
    """OpenAI and Anthropic: a request streams when its body says ``"stream": true``; absent, it does not."""
    return None if flag is None else flag is True


def _stream_in_path(path: str, flag: object) -> bool | None:
    """Gemini: the method in the path says it (``:streamGenerateContent`` or ``:generateContent``)."""
    return True if "streamGenerateContent" in path else False if "generateContent" in path else None


def _stream_unless_false(path: str, flag: object) -> bool | None:
    """Ollama: a request streams unless its body says ``"stream": false`` (absent, it streams)."""
    return None if flag is None else flag is not False


def _stream_in_bedrock_path(path: str, flag: object) -> bool | None:
    """Bedrock: the operation in the path says it (``invoke-with-response-stream``, ``converse-stream``)."""
    return path.endswith(("/invoke-with-response-stream", "/converse-stream"))


def _responses_create(body: Mapping[str, Any]) -> dict[str, Any]:
    """A Responses request as WebSocket mode's client event: the create body's own top-level fields under
    ``"type": "response.create"``; ``stream`` is implicit there and ``background`` is not supported."""
    return {"type": "response.create", **{k: v for k, v in body.items() if k not in ("stream", "background")}}


def _openai_error(message: str) -> bytes:
    error = {"type": "server_error", "code": "upstream_stream_failed", "message": message}
    data = {"type": "error", "code": error["code"], "message": message, "param": None, "error": error}
    return b"event: error\ndata: " + json.dumps(data).encode() + b"\n\n"


def _anthropic_error(message: str) -> bytes:
    data = {"type": "error", "error": {"type": "api_error", "message": message}}
    return b"event: error\ndata: " + json.dumps(data).encode() + b"\n\n"


def _gemini_error(message: str) -> bytes:
    data = {"error": {"code": 502, "message": message, "status": "UNAVAILABLE"}}
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def _ollama_error(message: str) -> bytes:
    return json.dumps({"error": message}).encode() + b"\n"  # a line the ollama client raises ResponseError on


def _responses_cursor(adapter: Adapter) -> tuple[str, int] | None:
    """A Responses stream's cursor: its response id and the last event's sequence number, once both are
    known."""
    if not isinstance(adapter, _Responses) or adapter.response_id is None or adapter.last_sequence < 0:
        return None
    return adapter.response_id, adapter.last_sequence


def _responses_resumed(adapter: Adapter) -> Adapter:
    if not isinstance(adapter, _Responses):
        raise TypeError(f"a Responses stream resumes from a Responses adapter, not {type(adapter).__name__}")
    return adapter.resumed()


def _thinking_on(body: Mapping[str, Any]) -> bool:
    """Anthropic never takes a prefill with extended thinking on, whatever the model."""
    thinking = body.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive")


def _chat_item(item: Any) -> bool:
    return getattr(item, "object", None) == "chat.completion.chunk"


def _responses_item(item: Any) -> bool:
    kind = getattr(item, "type", None)
    return isinstance(kind, str) and (kind.startswith("response.") or kind == "error")


def _messages_body(model: str, prompt: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": prompt}]}


def _responses_body(model: str, prompt: str) -> dict[str, Any]:
    return {"model": model, "input": prompt}


def _anthropic_body(model: str, prompt: str) -> dict[str, Any]:
    return {"model": model, "max_tokens": 1024, "messages": [{"role": "user", "content": prompt}]}


def _gemini_body(model: str, prompt: str) -> dict[str, Any]:
    return {"model": model, "contents": [{"role": "user", "parts": [{"text": prompt}]}]}


def _converse_body(model: str, prompt: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": [{"text": prompt}]}]}


def _converse_tools(tools: list[Any]) -> dict[str, Any]:
    return {"toolConfig": {"tools": tools}}


def _kit(name: str) -> KitName:
    return KitName("streamfsm.testing._kits", name)


_ANY_PREFILL: Final = Prefill()  # no request refuses a prefill, none is trimmed


@dataclass(frozen=True, slots=True)
class Format:
    """One wire format.

    * ``name``: what records, rules and ``open_stream`` call it; ``adapter``: frames → events, per stream
      (its ``whole_answers`` are the finish reasons that mean a whole answer);
    * ``framing``: a fresh framing for one streamed body, given the largest line or frame it may hold;
      ``sniffs_documents``: whether a body starting with ``{``, ``[`` or ``<`` is a document, not a stream
      (SSE: no SSE line starts so);
    * ``stream_types``: the content types a streamed answer is served as;
    * ``asks_to_stream(path, flag)``: whether a request asks for a stream, from its path and the body's
      top-level ``"stream"`` value (``ABSENT``, or None when it could not be looked at); None: not known;
    * ``answer_frames``: a whole JSON answer as the frames its stream would carry (None: not an answer);
    * ``continuation``: the request rewritten to continue after what was delivered (None: not supported);
    * ``otel_name``: ``gen_ai.provider.name``; ``paths``: the URL paths (regular expressions, searched) the
      tap recognises the format by; ``in_band_error``: the format's own error frame, which its SDKs raise on;
    * ``definitions``: the decision on every event, content kind, tool kind and finish its provider defines;
    * ``resume``: re-attaching to a broken stream by the provider's cursor (None: the format has none);
      ``prefill``: the rule for a continuation in the prefill style;
    * ``sdk``: how ``wrap()`` knows and reads the format's SDK streams (None: ``wrap()`` does not take them);
    * ``probe``: the smallest request ``streamfsm probe`` sends; ``key_header``: the header an API key goes in
      (``authorization`` carries ``Bearer KEY``, any other the key itself);
    * ``kit``: where the test kit's builders for the format are (its fault provider's streams, errors and
      whole answers).
    * ``websocket_path`` / ``websocket_create``: where the format is also spoken over a WebSocket (a
      ``ws://``/``wss://`` base URL, ``runtime.drivers.websocket``), the path under the base URL and the
      request as the client message that starts one response; None: HTTP only. Each server message is one
      frame, so no framing applies.
    """

    name: str
    adapter: type[Adapter]
    answer_frames: AnswerFrames
    otel_name: str
    paths: tuple[str, ...]
    in_band_error: Callable[[str], bytes]
    probe: Probe
    kit: KitName
    continuation: ContinuationRewrite | None = None
    resume: Resume | None = None
    prefill: Prefill = _ANY_PREFILL
    sdk: SdkSide | None = None
    key_header: str = "authorization"
    asks_to_stream: Callable[[str, object], bool | None] = _stream_flag_true
    framing: Callable[[int], Framing] = SSEDecoder
    sniffs_documents: bool = True
    stream_types: tuple[str, ...] = ("text/event-stream",)
    definitions: Definitions = NO_DEFINITIONS
    websocket_path: str | None = None
    websocket_create: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None

    @property
    def whole_answers(self) -> frozenset[str]:
        return self.adapter.whole_answers

    def is_stream(self, content_type: str) -> bool:
        """Whether a response of ``content_type`` is a stream of this format."""
        return content_type.lstrip().lower().startswith(self.stream_types)


FORMATS: Final[Mapping[str, Format]] = {
    fmt.name: fmt
    for fmt in (
        Format(
            "openai-chat",
            OpenAIChatAdapter,
            chat_answer,
            otel_name="openai",
            paths=(r"/chat/completions$",),
            in_band_error=_openai_error,
            continuation=chat_continuation,
            definitions=CHAT_DEFINITIONS,
            probe=Probe(_messages_body),
            kit=_kit("CHAT"),
            sdk=SdkSide(
                "openai", SdkOpenAIChat, ("openai.types.chat", "openai.resources.chat"), item=_chat_item
            ),
        ),
        Format(
            "openai-responses",
            OpenAIResponsesAdapter,
            responses_answer,
            otel_name="openai",
            paths=(r"/responses(/[^/]+)?$",),  # also GET /responses/{id}?stream=true (resume)
            in_band_error=_openai_error,
            continuation=responses_continuation,
            definitions=RESPONSES_DEFINITIONS,
            probe=Probe(_responses_body),
            kit=_kit("RESPONSES"),
            resume=Resume(
                asked=resumable_request,
                request=MappingProxyType({"background": True}),
                url=resume_url,
                cursor=_responses_cursor,
                resumed=_responses_resumed,
                refusal_of=refusal_of,
            ),
            sdk=SdkSide(
                "openai",
                SdkOpenAIResponses,
                ("openai.types.responses", "openai.resources.responses"),
                item=_responses_item,
            ),
            # WebSocket mode (the Agents SDK's and Codex's transport): wss://api.openai.com/v1/responses
            websocket_path="/responses",
            websocket_create=_responses_create,
        ),
        Format(
            "anthropic",
            AnthropicAdapter,
            anthropic_answer,
            otel_name="anthropic",
            paths=(r"/messages$",),
            in_band_error=_anthropic_error,
            continuation=anthropic_continuation,
            definitions=ANTHROPIC_DEFINITIONS,
            probe=Probe(_anthropic_body),
            kit=_kit("ANTHROPIC"),
            prefill=Prefill(_thinking_on, trims_whitespace=True),
            sdk=SdkSide("anthropic", SdkAnthropic, ("anthropic.types", "anthropic.resources"), sole=True),
            key_header="x-api-key",
        ),
        Format(
            "gemini",
            GeminiAdapter,
            gemini_answer,
            otel_name="gcp.gemini",
            paths=(r":streamGenerateContent$", r":generateContent$"),  # streaming, and the whole answer
            in_band_error=_gemini_error,
            continuation=gemini_continuation,
            asks_to_stream=_stream_in_path,
            definitions=GEMINI_DEFINITIONS,
            probe=Probe(_gemini_body, whole_path=(":streamGenerateContent?alt=sse", ":generateContent")),
            kit=_kit("GEMINI"),
            key_header="x-goog-api-key",
        ),
        Format(
            "ollama",  # Ollama's own API (https://github.com/ollama/ollama/blob/main/docs/api.md)
            OllamaAdapter,
            ollama_answer,
            otel_name="ollama",
            paths=(r"/api/chat$", r"/api/generate$"),
            in_band_error=_ollama_error,
            asks_to_stream=_stream_unless_false,
            framing=NDJSONDecoder,
            sniffs_documents=False,  # every line opens with "{": the framing tells a document apart
            stream_types=("application/x-ndjson",),
            definitions=OLLAMA_DEFINITIONS,
            probe=Probe(_messages_body),
            kit=_kit("OLLAMA"),
        ),
        Format(
            "anthropic-bedrock",
            AnthropicBedrockAdapter,
            anthropic_answer,  # InvokeModel answers the Messages JSON as it is
            otel_name="aws.bedrock",  # as anthropic's Bedrock client names it
            # .+: the tap matches the decoded path; a model named by its ARN holds a "/" (sent as %2F)
            paths=(r"/model/.+/invoke-with-response-stream$", r"/model/.+/invoke$"),
            in_band_error=exception_message,
            asks_to_stream=_stream_in_bedrock_path,
            framing=EventStreamDecoder,
            stream_types=(AWS_EVENT_STREAM,),
            definitions=ANTHROPIC_BEDROCK_DEFINITIONS,
            probe=Probe(_anthropic_body, signed=True, whole_path=("/invoke-with-response-stream", "/invoke")),
            kit=_kit("ANTHROPIC_BEDROCK"),
        ),
        Format(
            "bedrock-converse",
            BedrockConverseAdapter,
            converse_answer,
            otel_name="aws.bedrock",
            paths=(r"/model/.+/converse-stream$", r"/model/.+/converse$"),
            in_band_error=exception_message,
            asks_to_stream=_stream_in_bedrock_path,
            framing=EventStreamDecoder,
            stream_types=(AWS_EVENT_STREAM,),
            definitions=CONVERSE_DEFINITIONS,
            probe=Probe(
                _converse_body, _converse_tools, signed=True, whole_path=("/converse-stream", "/converse")
            ),
            kit=_kit("BEDROCK_CONVERSE"),
            # boto3's converse_stream()["stream"]: botocore's EventStream of ConverseStream
            sdk=SdkSide("botocore", SdkBedrockConverse, operation="ConverseStream"),
        ),
    )
}
"""Format name → its ``Format``."""

FORMAT_NAMES: Final = tuple(FORMATS)
_ANY_WHOLE: Final = frozenset().union(*(fmt.whole_answers for fmt in FORMATS.values()))


def format_named(name: str) -> Format:
    """The format called ``name`` (one of ``FORMAT_NAMES``)."""
    try:
        return FORMATS[name]
    except (KeyError, TypeError):
        valid = ", ".join(repr(name) for name in FORMAT_NAMES)
        raise ValueError(f"unknown provider format {name!r}; expected one of {valid}") from None


def whole_answers_of(name: str | None) -> frozenset[str]:
    """The finish reasons that mean a whole answer in format ``name``; any format's, when it is not one."""
    fmt = FORMATS.get(name) if isinstance(name, str) else None
    return fmt.whole_answers if fmt is not None else _ANY_WHOLE


def adapter_for(provider: str) -> Adapter:
    """A fresh adapter for one stream of ``provider`` (one of ``FORMAT_NAMES``)."""
    return format_named(provider).adapter()


def style_for(fmt: str, body: Mapping[str, Any], asked: ContinueStyle | None = None) -> ContinueStyle:
    """The style a continuation of ``body`` is sent in: an instruction unless a prefill was asked for, and
    never a prefill the format refuses whatever the model (``Format.prefill``)."""
    if asked is not ContinueStyle.PREFILL:
        return ContinueStyle.INSTRUCTION
    fmt_ = FORMATS.get(fmt)
    if fmt_ is not None and fmt_.prefill.blocked(body):
        return ContinueStyle.INSTRUCTION
    return ContinueStyle.PREFILL


def dropped_whitespace(
    fmt: str, body: Mapping[str, Any], continuation: Continuation, style: ContinueStyle | None = None
) -> int:
    """How many trailing whitespace characters of the delivered text `continuation_body` leaves out (a
    prefill of a format that trims it): the model may write them again, and the consumer already has them."""
    fmt_ = FORMATS.get(fmt)
    if (
        fmt_ is None
        or not fmt_.prefill.trims_whitespace
        or continuation.calls
        or style_for(fmt, body, style) is not ContinueStyle.PREFILL
    ):
        return 0
    text = continuation.text
    return len(text) - len(text.rstrip())


def continuation_body(
    fmt: str, body: Mapping[str, Any], continuation: Continuation, style: ContinueStyle | None = None
) -> dict[str, Any]:
    """``body`` (a request of format ``fmt``) rewritten to continue after ``continuation``."""
    rewrite = FORMATS[fmt].continuation if fmt in FORMATS else None
    if rewrite is None:
        raise ValueError(f"no continuation rewrite for format {fmt!r}")
    missing = [c.call_id for c in continuation.calls if c.call_id not in continuation.results]
    if missing:
        raise ValueError(
            f"a continuation carries every complete call with its result; {len(missing)} lack one"
        )
    return rewrite(body, continuation, style_for(fmt, body, style))
