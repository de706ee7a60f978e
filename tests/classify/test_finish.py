"""The finish-reason tables (``streamfsm.classify._finish``): well formed, and read as the rule says."""

from __future__ import annotations

import pytest

from streamfsm.classify import (
    NOT_WHOLE,
    FinishCause,
    ProviderErrorKind,
    finish_cause,
    finish_error,
)
from streamfsm.classify._finish import ERROR_FINISH, MAX_FINISH_RAW, shown_reason
from streamfsm.wire import FORMATS, whole_answers_of

WHOLE_ANSWER = {name: fmt.whole_answers for name, fmt in FORMATS.items()}


def test_the_tables_are_case_folded_and_never_overlap() -> None:
    whole = {reason for reasons in WHOLE_ANSWER.values() for reason in reasons}
    for reason in [*whole, *NOT_WHOLE, *ERROR_FINISH]:
        assert reason == reason.casefold()
    assert whole.isdisjoint(NOT_WHOLE) and whole.isdisjoint(ERROR_FINISH)
    assert FinishCause.FINISHED not in NOT_WHOLE.values()
    assert {"openai-chat", "openai-responses", "anthropic", "gemini"} <= set(WHOLE_ANSWER)
    # A whole answer is never read as the provider's error (``finish_error`` does not look at the formats).
    assert all(finish_error(reason) is None for reason in whole)


@pytest.mark.parametrize(
    ("fmt", "raw", "cause"),
    [
        ("gemini", "STOP", FinishCause.FINISHED),
        ("openai-chat", "tool_calls", FinishCause.FINISHED),
        ("anthropic", "stop", FinishCause.UNRECOGNISED),  # a chat word is no Anthropic stop_reason
        ("openai-chat", "end_turn", FinishCause.UNRECOGNISED),
        ("openai-chat", "max_tokens", FinishCause.LENGTH),  # known bad anywhere is bad everywhere
        ("gemini", "OTHER", FinishCause.UNRECOGNISED),
        ("anthropic", "pause_turn", FinishCause.PAUSED),
        ("openai-responses", "queued", FinishCause.BACKGROUND),  # background mode: answered later
        ("openai-responses", "in_progress", FinishCause.BACKGROUND),
        ("openai-chat", "sensitive", FinishCause.CONTENT_FILTER),
        ("openai-chat", None, FinishCause.UNRECOGNISED),
        ("openai-chat", "stop" + " " * MAX_FINISH_RAW, FinishCause.UNRECOGNISED),
        (None, "end_turn", FinishCause.FINISHED),  # an unknown format: any format's whole answer
    ],
)
def test_finish_cause(fmt: str | None, raw: str | None, cause: FinishCause) -> None:
    assert finish_cause(whole_answers_of(fmt), raw) is cause


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("error", ProviderErrorKind.UNKNOWN),
        ("abort", ProviderErrorKind.UNKNOWN),
        ("network_error", ProviderErrorKind.UNKNOWN),
        ("Engine-Error", ProviderErrorKind.UNKNOWN),
        ("request.cancelled", ProviderErrorKind.UNKNOWN),
        ("insufficient_system_resource", ProviderErrorKind.OVERLOADED),
        ("stop", None),
        ("length", None),
        ("errorless_stop", None),  # words, not substrings
        ("terror", None),
    ],
)
def test_a_finish_reason_reads_as_an_error_by_its_words(raw: str, kind: ProviderErrorKind | None) -> None:
    error = finish_error(raw)
    assert (error.kind if error is not None else None) is kind
    if error is not None:
        assert error.markers == (f"finish_reason={raw}",)


def test_a_hostile_reason_is_shown_redacted_and_bounded() -> None:
    error = finish_error("error sk-proj-" + "aB3" * 13 + "\x1b[2J")
    assert error is not None
    (marker,) = error.markers
    assert "aB3aB3" not in marker and "\x1b" not in marker and len(marker) <= 60
    assert shown_reason("engine_" * 10).endswith("\u2026"), "a cut reason says so (was '?')"
