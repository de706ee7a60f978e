"""Gemini's wire, decided member by member from google-genai's own models (``google.genai.types``) and the
Gemini / Vertex AI API references.

The wire is camelCase JSON; the SDK's pydantic fields are snake_case with camelCase aliases, and the keys
here are the aliases, as sent. A stream chunk is a ``GenerateContentResponse``; its fields, its candidates'
fields and their contents' fields are in ``EVENTS`` (a path per field: ``candidates[].finishReason``);
a ``Part``'s fields in ``CONTENT``; the tool call kinds and the fields of a function call and of its
streamed argument fragments in ``TOOLS``; every ``FinishReason`` and every prompt ``BlockedReason`` in
``FINISHES``. ``tests/wire/test_definitions_gemini.py`` walks the installed SDK against these tables.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

from .._definitions import Decided, Definitions, informational, not_understood, read

_API: Final = "ai.google.dev/api/generate-content"
_VERTEX: Final = "cloud.google.com/vertex-ai/docs/reference/rest/v1/Content"
_SDK_ONLY: Final = "set by the SDK on the object it returns, never sent on the wire"


def _src(model: str, field: str, ref: str = _API) -> str:
    return f"google-genai types.{model}.{field}; {ref}"


def _table(prefix: str, entries: dict[str, Decided]) -> dict[str, Decided]:
    return {f"{prefix}{name}": decided for name, decided in entries.items()}


def _r(model: str, field: str, means: str, ref: str = _API) -> Decided:
    return read(_src(model, field, ref), means)


def _i(model: str, field: str, means: str, ref: str = _API) -> Decided:
    return informational(_src(model, field, ref), means)


_RESPONSE: Final = "GenerateContentResponse"
_CANDIDATE: Final = "Candidate"
_USAGE: Final = "GenerateContentResponseUsageMetadata"
_FEEDBACK: Final = "GenerateContentResponsePromptFeedback"

EVENTS: Final = MappingProxyType(
    {
        "candidates": _r(_RESPONSE, "candidates", "the answer: candidate 0 is followed"),
        "promptFeedback": _r(_RESPONSE, "prompt_feedback", "a blockReason: the prompt was refused"),
        "usageMetadata": _r(_RESPONSE, "usage_metadata", "token usage"),
        "responseId": _r(_RESPONSE, "response_id", "the record's response id"),
        "modelVersion": _r(_RESPONSE, "model_version", "the record's model"),
        "createTime": _i(_RESPONSE, "create_time", "a timestamp"),
        "modelStatus": _i(_RESPONSE, "model_status", "the model's lifecycle stage"),
        "sdkHttpResponse": _i(_RESPONSE, "sdk_http_response", _SDK_ONLY),
        "automaticFunctionCallingHistory": _i(_RESPONSE, "automatic_function_calling_history", _SDK_ONLY),
        "parsed": _i(_RESPONSE, "parsed", _SDK_ONLY),
        **_table(
            "candidates[].",
            {
                "content": _r(_CANDIDATE, "content", "the candidate's parts"),
                "finishReason": _r(_CANDIDATE, "finish_reason", "the finish (see FINISHES)"),
                "index": _r(_CANDIDATE, "index", "a candidate other than 0 is counted as extra_choice"),
                "finishMessage": _i(_CANDIDATE, "finish_message", "the provider's words on the finish"),
                "citationMetadata": _i(_CANDIDATE, "citation_metadata", "citations"),
                "groundingMetadata": _i(_CANDIDATE, "grounding_metadata", "a hosted search's sources"),
                "urlContextMetadata": _i(
                    _CANDIDATE, "url_context_metadata", "the URL context tool's fetches"
                ),
                "safetyRatings": _i(_CANDIDATE, "safety_ratings", "safety scores (a block is a finish)"),
                "tokenCount": _i(_CANDIDATE, "token_count", "the candidate's tokens (usage counts)"),
                "avgLogprobs": _i(_CANDIDATE, "avg_logprobs", "log-probabilities"),
                "logprobsResult": _i(_CANDIDATE, "logprobs_result", "log-probabilities"),
                "continuationToken": _i(
                    _CANDIDATE, "continuation_token", "with finish CONTINUATION: what continues it"
                ),
            },
        ),
        **_table(
            "candidates[].content.",
            {
                "parts": _r("Content", "parts", "the parts (see CONTENT)"),
                "role": _i("Content", "role", "always 'model' in an answer"),
            },
        ),
        **_table(
            "usageMetadata.",
            {
                "promptTokenCount": _r(_USAGE, "prompt_token_count", "input tokens"),
                "toolUsePromptTokenCount": _r(
                    _USAGE,
                    "tool_use_prompt_token_count",
                    "input tokens of hosted tools' results (search, code execution): added to input",
                ),
                "cachedContentTokenCount": _r(_USAGE, "cached_content_token_count", "cached input tokens"),
                "candidatesTokenCount": _r(_USAGE, "candidates_token_count", "output tokens, thoughts apart"),
                "thoughtsTokenCount": _r(
                    _USAGE, "thoughts_token_count", "reasoning tokens: added to output, and counted apart"
                ),
                "totalTokenCount": _r(_USAGE, "total_token_count", "the provider's total"),
                "promptTokensDetails": _i(_USAGE, "prompt_tokens_details", "per modality"),
                "cacheTokensDetails": _i(_USAGE, "cache_tokens_details", "per modality"),
                "candidatesTokensDetails": _i(_USAGE, "candidates_tokens_details", "per modality"),
                "toolUsePromptTokensDetails": _i(_USAGE, "tool_use_prompt_tokens_details", "per modality"),
                "trafficType": _i(_USAGE, "traffic_type", "pay-as-you-go or provisioned"),
            },
        ),
        **_table(
            "promptFeedback.",
            {
                "blockReason": _r(
                    _FEEDBACK, "block_reason", "the prompt was blocked: provider error content_filter"
                ),
                "blockReasonMessage": _i(_FEEDBACK, "block_reason_message", "the provider's words on it"),
                "safetyRatings": _i(_FEEDBACK, "safety_ratings", "the prompt's safety scores"),
            },
        ),
    }
)
"""Every field of a stream chunk (``GenerateContentResponse``) and of what it holds, by wire path."""

_PART: Final = "Part"
_MEDIA: Final = "media or its metadata: no text (the answer's bytes are the client's to read)"

CONTENT: Final = MappingProxyType(
    {
        "text": _r(_PART, "text", "answer text (reasoning when 'thought' is true)"),
        "thought": _r(_PART, "thought", "true: the part's text is a thought summary (reasoning)"),
        "functionCall": _r(_PART, "function_call", "a call the agent runs (see TOOLS)"),
        "executableCode": _r(_PART, "executable_code", "code the provider runs: a server-side call"),
        "toolCall": _r(_PART, "tool_call", "a built-in tool the provider runs: a server-side call"),
        "thoughtSignature": _i(_PART, "thought_signature", "opaque: sent back with the turn"),
        "codeExecutionResult": _i(_PART, "code_execution_result", "the outcome of the provider's run"),
        "toolResponse": _i(_PART, "tool_response", "the output of a built-in tool the provider ran"),
        "inlineData": _i(_PART, "inline_data", _MEDIA),
        "fileData": _i(_PART, "file_data", _MEDIA),
        "videoMetadata": _i(_PART, "video_metadata", _MEDIA),
        "mediaResolution": _i(_PART, "media_resolution", _MEDIA),
        "mediaProcessing": _i(_PART, "media_processing", _MEDIA),
        "audioMetadata": _i(_PART, "audio_metadata", _MEDIA),
        "documentMetadata": _i(_PART, "document_metadata", _MEDIA),
        "spreadsheetMetadata": _i(_PART, "spreadsheet_metadata", _MEDIA),
        "speechMetadata": _i(_PART, "speech_metadata", "how a text part is spoken"),
        "audioTranscription": _i(_PART, "audio_transcription", "a transcript of an audio part"),
        "partMetadata": _i(_PART, "part_metadata", "the client's own bookkeeping"),
        "functionResponse": not_understood(
            _src(_PART, "function_response"),
            "the client's reply to a call: a model never sends one, so an answer holding it is not read",
        ),
    }
)
"""Every field of a ``Part``: a field not here, or not understood, is ``unread_content``."""

_CALL: Final = "FunctionCall"
_ARG: Final = "PartialArg"
_STREAMED: Final = "Vertex AI only (FunctionCallingConfig.streamFunctionCallArguments)"

TOOLS: Final = MappingProxyType(
    {
        "functionCall": _r(_PART, "function_call", "a function call: the agent runs it"),
        "executableCode": _r(_PART, "executable_code", "code execution: server-side, named 'code_execution'"),
        "toolCall": _r(_PART, "tool_call", "a built-in tool (search, maps, URL context): server-side"),
        **_table(
            "functionCall.",
            {
                "id": _r(_CALL, "id", "the call id (else call_<n>)"),
                "name": _r(_CALL, "name", "the function; a part with a name starts a call"),
                "args": _r(_CALL, "args", "the arguments, whole"),
                "partialArgs": _r(
                    _CALL, "partial_args", f"argument fragments at JSON paths ({_STREAMED})", _VERTEX
                ),
                "willContinue": _r(
                    _CALL, "will_continue", f"true: later parts continue this call ({_STREAMED})", _VERTEX
                ),
            },
        ),
        **_table(
            "functionCall.partialArgs[].",
            {
                "jsonPath": _r(_ARG, "json_path", "where the value goes (RFC 9535: $.a.b[0])", _VERTEX),
                "stringValue": _r(_ARG, "string_value", "a string, or a piece of one", _VERTEX),
                "numberValue": _r(_ARG, "number_value", "a number", _VERTEX),
                "boolValue": _r(_ARG, "bool_value", "a boolean", _VERTEX),
                "nullValue": _r(_ARG, "null_value", "null", _VERTEX),
                "willContinue": _r(
                    _ARG, "will_continue", "true: the string at this path goes on in the next piece", _VERTEX
                ),
            },
        ),
        **_table(
            "executableCode.",
            {
                "code": _r("ExecutableCode", "code", "the code: the server-side call's arguments"),
                "language": _r("ExecutableCode", "language", "its language: in the arguments"),
                "id": _r("ExecutableCode", "id", "the call id (else call_<n>)"),
            },
        ),
        **_table(
            "toolCall.",
            {
                "toolType": _r("ToolCall", "tool_type", "the built-in tool: the call's name"),
                "args": _r("ToolCall", "args", "its arguments"),
                "id": _r("ToolCall", "id", "the call id (else call_<n>)"),
            },
        ),
    }
)
"""The tool call kinds a part carries, and the fields of each the adapter reads."""

_FINISH: Final = "FinishReason"
_BLOCKED: Final = "BlockedReason"


def _f(member: str, means: str) -> Decided:
    return read(_src(_FINISH, member), means)


def _unknown_finish(member: str, means: str) -> Decided:
    return not_understood(_src(_FINISH, member), f"{means}: not a whole answer (unrecognised, named as sent)")


_FILTERED: Final = "not a whole answer: content_filter"

FINISHES: Final = MappingProxyType(
    {
        "STOP": _f(
            "STOP", "the whole answer (after function calls: tool_calls, and the calls are handed out)"
        ),
        "MAX_TOKENS": _f("MAX_TOKENS", "not a whole answer: length"),
        "SAFETY": _f("SAFETY", _FILTERED),
        "RECITATION": _f("RECITATION", _FILTERED),
        "LANGUAGE": _f("LANGUAGE", f"{_FILTERED} (flagged for an unsupported language)"),
        "BLOCKLIST": _f("BLOCKLIST", _FILTERED),
        "PROHIBITED_CONTENT": _f("PROHIBITED_CONTENT", _FILTERED),
        "SPII": _f("SPII", _FILTERED),
        "IMAGE_SAFETY": _f("IMAGE_SAFETY", _FILTERED),
        "IMAGE_PROHIBITED_CONTENT": _f("IMAGE_PROHIBITED_CONTENT", _FILTERED),
        "IMAGE_RECITATION": _f("IMAGE_RECITATION", _FILTERED),
        "ESCALATION": _f("ESCALATION", f"{_FILTERED} (an escalation rule)"),
        "MODEL_ARMOR": _f("MODEL_ARMOR", f"{_FILTERED} (Model Armor)"),
        "MALFORMED_FUNCTION_CALL": _f(
            "MALFORMED_FUNCTION_CALL", "not a whole answer: malformed_tool_call; no call is handed out"
        ),
        "UNEXPECTED_TOOL_CALL": _f(
            "UNEXPECTED_TOOL_CALL", "not a whole answer: malformed_tool_call; no call is handed out"
        ),
        "TOO_MANY_TOOL_CALLS": _f(
            "TOO_MANY_TOOL_CALLS", "not a whole answer: malformed_tool_call; no call is handed out"
        ),
        "CONTINUATION": _f(
            "CONTINUATION", "not a whole answer: paused at the per-request limit, continued by its token"
        ),
        "MISSING_THOUGHT_SIGNATURE": _f(
            "MISSING_THOUGHT_SIGNATURE", "the provider's error invalid_request: the request lacks a signature"
        ),
        "PUP_LIMITED_DISABLED": _f(
            "PUP_LIMITED_DISABLED", "the provider's error permission: the account is limited or disabled"
        ),
        "FINISH_REASON_UNSPECIFIED": _unknown_finish("FINISH_REASON_UNSPECIFIED", "no reason given"),
        "OTHER": _unknown_finish("OTHER", "a reason not otherwise specified"),
        "IMAGE_OTHER": _unknown_finish("IMAGE_OTHER", "an image stop not otherwise specified"),
        "NO_IMAGE": _unknown_finish("NO_IMAGE", "an image was expected and none came"),
        "MALFORMED_RESPONSE": _unknown_finish("MALFORMED_RESPONSE", "the response was malformed"),
        **{
            f"promptFeedback.blockReason={member}": read(
                _src(_BLOCKED, member),
                "the prompt was blocked before any candidate: the provider's error content_filter, never"
                " a whole answer",
            )
            for member in (
                "BLOCKED_REASON_UNSPECIFIED",
                "SAFETY",
                "OTHER",
                "BLOCKLIST",
                "PROHIBITED_CONTENT",
                "IMAGE_SAFETY",
                "MODEL_ARMOR",
                "JAILBREAK",
            )
        },
    }
)
"""Every ``FinishReason``, and every ``BlockedReason`` (as ``promptFeedback.blockReason=<member>``)."""

DEFINITIONS: Final = Definitions(events=EVENTS, content=CONTENT, tools=TOOLS, finishes=FINISHES)
