"""What a provider's finish reason means: a whole answer, a known incomplete one, an error, or unrecognised.

The rule (DESIGN §12.1): recognise the known-good, never enumerate the known-bad. A reason is a whole answer
only if it is in its format's whole-answer set (its adapter's ``whole_answers``, in ``streamfsm.wire``). A
reason known anywhere as incomplete (the output limit, a filter, a refusal, a malformed call, a paused
turn) is that, whatever the format: being stricter than a format's own list is never wrong. A reason whose
words say error or abort is the provider's error at that point of the stream. Anything else is
``unrecognised``: never a whole answer.

Matching is on the case-folded reason (Gemini sends ``STOP``, chat servers ``stop``); a reason longer than
``MAX_FINISH_RAW`` matches nothing.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Final

from ._redact import redact_text
from ._taxonomy import Confidence, FinishCause, ProviderError, ProviderErrorKind

MAX_FINISH_RAW: Final = 64
MAX_SHOWN: Final = 40  # characters of a raw reason a title or an evidence item shows


NOT_WHOLE: Final[Mapping[str, FinishCause]] = {
    "length": FinishCause.LENGTH,  # OpenAI chat; vLLM, SGLang, TGI, llama.cpp, Ollama, Mistral, DeepSeek
    "max_tokens": FinishCause.LENGTH,  # Anthropic; Gemini MAX_TOKENS
    "max_output_tokens": FinishCause.LENGTH,  # Responses incomplete_details.reason
    "model_length": FinishCause.LENGTH,  # Mistral: the context window is full
    "model_context_window_exceeded": FinishCause.LENGTH,  # Anthropic; Zhipu GLM / z.ai
    "content_filter": FinishCause.CONTENT_FILTER,  # OpenAI chat, Responses, Azure, DeepSeek, Moonshot
    "sensitive": FinishCause.CONTENT_FILTER,  # Zhipu GLM: blocked by its safety review
    "guardrail_intervened": FinishCause.CONTENT_FILTER,  # Bedrock guardrails (Converse), via LiteLLM
    "content_filtered": FinishCause.CONTENT_FILTER,  # Bedrock Converse stopReason
    "safety": FinishCause.CONTENT_FILTER,  # Gemini SAFETY, and the rest of its filters below
    "recitation": FinishCause.CONTENT_FILTER,  # Gemini
    "blocklist": FinishCause.CONTENT_FILTER,  # Gemini
    "prohibited_content": FinishCause.CONTENT_FILTER,  # Gemini
    "spii": FinishCause.CONTENT_FILTER,  # Gemini: sensitive personal data
    "image_safety": FinishCause.CONTENT_FILTER,  # Gemini
    "image_prohibited_content": FinishCause.CONTENT_FILTER,  # Gemini
    "image_recitation": FinishCause.CONTENT_FILTER,  # Gemini
    "language": FinishCause.CONTENT_FILTER,  # Gemini: flagged for an unsupported language
    "escalation": FinishCause.CONTENT_FILTER,  # Gemini: filtered by an escalation rule
    "model_armor": FinishCause.CONTENT_FILTER,  # Gemini on Vertex: blocked by Model Armor
    "refusal": FinishCause.REFUSAL,  # Anthropic: the model declined
    "malformed_function_call": FinishCause.MALFORMED_TOOL_CALL,  # Gemini
    "unexpected_tool_call": FinishCause.MALFORMED_TOOL_CALL,  # Gemini: a call to a tool it was not given
    "too_many_tool_calls": FinishCause.MALFORMED_TOOL_CALL,  # Gemini
    "pause_turn": FinishCause.PAUSED,  # Anthropic: a long server-tool turn paused; send it back to continue
    "compaction": FinishCause.PAUSED,  # Anthropic (beta): paused after compacting the context; send it back
    "malformed_tool_use": FinishCause.MALFORMED_TOOL_CALL,  # Bedrock Converse: the model's call is malformed
    "malformed_model_output": FinishCause.MALFORMED_TOOL_CALL,  # Bedrock Converse: output it could not parse
    "continuation": FinishCause.PAUSED,  # Gemini: the per-request limit; its continuationToken continues it
    # OpenAI Responses background mode (https://platform.openai.com/docs/guides/background): a request with
    # background=true is answered at once with status queued or in_progress; poll GET /responses/{id}
    "queued": FinishCause.BACKGROUND,
    "in_progress": FinishCause.BACKGROUND,
}
"""Finish reasons known, in any format, not to be a whole answer (case-folded)."""

ERROR_FINISH: Final[Mapping[str, ProviderErrorKind]] = {
    "insufficient_system_resource": ProviderErrorKind.OVERLOADED,  # DeepSeek: inference resources ran out
    "missing_thought_signature": ProviderErrorKind.INVALID_REQUEST,  # Gemini: the request lacks a signature
    "pup_limited_disabled": ProviderErrorKind.PERMISSION,  # Gemini: the account is limited or disabled
}
"""Finish reasons that are the provider's error, with the kind their documentation gives."""

ERROR_WORDS: Final = frozenset(
    {
        "error",  # OpenRouter and gateways, Mistral, vLLM; network_error (Zhipu GLM), engine_error, ...
        "errored",
        "exception",
        "failed",
        "failure",
        "abort",  # vLLM, SGLang: the engine aborted the request
        "aborted",
        "cancelled",
        "canceled",
        "timeout",  # Cohere's TIMEOUT
        "interrupted",
    }
)
"""Words that make a finish reason the provider's error, whatever else it says (read as words: split on
``_`` ``-`` ``.`` and blanks, case-folded)."""

_WORD_SPLIT: Final = re.compile(r"[_\-.\s/:]+")
_NOT_SHOWN: Final = re.compile(r"[^\x20-\x7e]")


def _key(raw: str | None) -> str | None:
    if not isinstance(raw, str) or len(raw) > MAX_FINISH_RAW:
        return None
    return raw.casefold()


def finish_cause(whole_answers: Collection[str], raw: str | None) -> FinishCause:
    """What a finish means for the user: ``FINISHED`` only for a reason in the format's ``whole_answers``
    (its adapter's, case-folded); a known incomplete cause; else ``UNRECOGNISED`` (a missing reason
    included). Error-like reasons (``finish_error``) are not finishes at all; here they are
    ``UNRECOGNISED``."""
    key = _key(raw)
    if key is None:
        return FinishCause.UNRECOGNISED
    if key in whole_answers:
        return FinishCause.FINISHED
    return NOT_WHOLE.get(key, FinishCause.UNRECOGNISED)


def is_whole(whole_answers: Collection[str], raw: str | None) -> bool:
    return finish_cause(whole_answers, raw) is FinishCause.FINISHED


def shown_reason(raw: str | None) -> str:
    """A raw finish reason fit for a title or evidence: printable ASCII, redacted, bounded (an ellipsis
    where cut)."""
    if raw is None:
        return "none"
    return redact_text(_NOT_SHOWN.sub("?", raw), limit=MAX_SHOWN) or "empty"


def finish_error(raw: str | None) -> ProviderError | None:
    """The provider error a finish reason stands for (``finish_reason: "error"``, ``abort``,
    ``network_error``, ...), or None for a reason that is a finish (known or not). No format's whole-answer
    reason says error (checked by the formats' tests)."""
    key = _key(raw)
    if key is None or key in NOT_WHOLE:
        return None
    kind = ERROR_FINISH.get(key)
    if kind is None:
        if ERROR_WORDS.isdisjoint(_WORD_SPLIT.split(key)):
            return None
        kind = ProviderErrorKind.UNKNOWN
    marker = f"finish_reason={shown_reason(raw)}"
    return ProviderError(kind, markers=(marker,), confidence=Confidence.MEDIUM)
