"""The gemini format decides every member google-genai defines (DESIGN §13.1).

The walk reads the installed SDK's pydantic models by their wire names (the camelCase aliases) and its
enums, and fails naming each member the format's ``Definitions`` has no decision for: a new SDK release
that adds a part field, a usage count or a finish reason is a failing test, not silence. The consistency
checks tie the tables to the adapter (each READ part field has a reader) and to the finish classifier.
"""

from __future__ import annotations

from typing import Any

import pytest

from streamfsm.classify import FinishCause, finish_cause, finish_error
from streamfsm.wire import Decision, format_named, undecided

types = pytest.importorskip("google.genai.types", reason="google-genai (the test extra; Python 3.11+)")

GEMINI = format_named("gemini")
TABLES = GEMINI.definitions


def _aliases(model: Any, prefix: str = "") -> list[str]:
    return [prefix + (field.alias or name) for name, field in model.model_fields.items()]


def _events() -> list[str]:
    return [
        *_aliases(types.GenerateContentResponse),
        *_aliases(types.Candidate, "candidates[]."),
        *_aliases(types.Content, "candidates[].content."),
        *_aliases(types.GenerateContentResponseUsageMetadata, "usageMetadata."),
        *_aliases(types.GenerateContentResponsePromptFeedback, "promptFeedback."),
    ]


def _tools() -> list[str]:
    return [
        "functionCall",
        "executableCode",
        "toolCall",
        *_aliases(types.FunctionCall, "functionCall."),
        *_aliases(types.PartialArg, "functionCall.partialArgs[]."),
        *_aliases(types.ExecutableCode, "executableCode."),
        *_aliases(types.ToolCall, "toolCall."),
    ]


def _finishes() -> list[str]:
    return [
        *(member.value for member in types.FinishReason),
        *(f"promptFeedback.blockReason={member.value}" for member in types.BlockedReason),
    ]


WALKS = {
    "events": _events,
    "content": lambda: _aliases(types.Part),
    "tools": _tools,
    "finishes": _finishes,
}


@pytest.mark.parametrize("kind", list(WALKS))
def test_every_member_the_sdk_defines_has_a_decision(kind: str) -> None:
    missing = undecided(WALKS[kind](), TABLES.tables()[kind])
    assert not missing, f"gemini {kind} without a decision: {', '.join(missing)}"


@pytest.mark.parametrize("kind", list(WALKS))
def test_no_decision_for_a_member_the_sdk_does_not_define(kind: str) -> None:
    stale = sorted(set(TABLES.tables()[kind]) - set(WALKS[kind]()))
    assert not stale, f"gemini {kind} decided but not defined by google-genai: {', '.join(stale)}"


def test_every_decision_names_its_source_and_meaning() -> None:
    for kind, table in TABLES.tables().items():
        for member, decided in table.items():
            assert decided.source.startswith("google-genai types."), (kind, member)
            assert decided.means, (kind, member)


def test_each_read_part_field_has_a_reader() -> None:
    from streamfsm.wire._adapters._gemini import MODIFIERS, READERS

    read = {key for key, d in TABLES.content.items() if d.decision is Decision.READ}
    assert read == set(READERS) | MODIFIERS
    tools = {key for key in TABLES.tools if "." not in key}
    assert tools <= set(READERS)


def test_finish_decisions_agree_with_the_classifier() -> None:
    """A READ finish is the whole answer, a known incomplete kind or the provider's error; a finish not
    understood is unrecognised (never a whole answer, never an error)."""
    whole = GEMINI.whole_answers
    for member, decided in TABLES.finishes.items():
        if member.startswith("promptFeedback."):
            continue
        cause, error = finish_cause(whole, member), finish_error(member)
        if decided.decision is Decision.READ:
            assert error is not None or cause is not FinishCause.UNRECOGNISED, member
        else:
            assert decided.decision is Decision.NOT_UNDERSTOOD, member
            assert cause is FinishCause.UNRECOGNISED and error is None, member
    assert {m for m in TABLES.finishes if finish_cause(whole, m) is FinishCause.FINISHED} == {"STOP"}
