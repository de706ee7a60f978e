"""The ollama format decides every field the installed ollama client's response types define (a chat and a
generate line, the message, a tool call and its function) and every ``done_reason`` the API reference gives.
A client release that adds a field fails here, naming it. The adapter follows the table."""

from __future__ import annotations

import json
from typing import Any

import pytest

from streamfsm.wire import FORMATS, UNREAD_CONTENT, Decision, Frame, adapter_for, undecided
from streamfsm.wire._adapters import _ollama

types = pytest.importorskip(
    "ollama._types", reason="the ollama client is not installed (it needs httpx 0.27, above the core's floor)"
)

# https://github.com/ollama/ollama/blob/main/docs/api.md: the done_reason values a stream ends with
# ("connection_closed": the server's DoneReason string for a runner whose connection closed).
DONE_REASONS = ("stop", "length", "load", "unload", "connection_closed")


def _fields(model: Any) -> set[str]:
    fields = getattr(model, "model_fields", None) or getattr(model, "__fields__", {})
    return set(fields)


def _walks() -> dict[str, set[str]]:
    call = types.Message.ToolCall
    return {
        "events": (_fields(types.ChatResponse) | _fields(types.GenerateResponse)) | {"error"},
        "content": _fields(types.Message),
        "tools": _fields(call) | {f"function.{name}" for name in _fields(call.Function)},
        "finishes": set(DONE_REASONS),
    }


@pytest.mark.parametrize("table", ["events", "content", "tools", "finishes"])
def test_every_member_the_client_defines_has_a_decision(table: str) -> None:
    members = _walks()[table]
    missing = undecided(members, FORMATS["ollama"].definitions.tables()[table])
    assert not missing, f"the ollama client defines {table} with no decision: {missing}"


def test_every_decision_names_its_source_and_the_adapter_follows_the_finishes() -> None:
    for table in _ollama.DEFINITIONS.tables().values():
        assert table and all(decided.source and decided.means for decided in table.values())
    assert set(_ollama._FINISHES) == set(_ollama.FINISHES)
    assert _ollama.OllamaAdapter.whole_answers < set(_ollama._FINISHES)


def _line(**fields: Any) -> Frame:
    return Frame(json.dumps({"model": "llama3.2", "created_at": "2026-12-01T00:00:00Z", **fields}))


@pytest.mark.parametrize("field", sorted(_ollama.EVENTS))
def test_a_line_field_is_unread_content_exactly_when_the_table_does_not_know_it(field: str) -> None:
    adapter = adapter_for("ollama")
    values = {"message": {"role": "assistant", "content": "Hi"}, "done": False, "error": None}
    values |= {"response": "Hi", "thinking": "Hm", "model": "llama3.2", "done_reason": "stop"}
    adapter.feed(_line(**{field: values.get(field, 1)}))
    unread = _ollama.EVENTS[field].decision is Decision.NOT_UNDERSTOOD
    assert (UNREAD_CONTENT in adapter.anomalies) is unread


@pytest.mark.parametrize("field", sorted(_ollama.CONTENT))
def test_a_message_field_is_unread_content_exactly_when_the_table_does_not_know_it(field: str) -> None:
    adapter = adapter_for("ollama")
    adapter.feed(_line(message={"role": "assistant", field: "x" if field != "tool_calls" else []}))
    assert UNREAD_CONTENT not in adapter.anomalies
    adapter.feed(_line(message={"role": "assistant", "hologram": "x"}))
    assert UNREAD_CONTENT in adapter.anomalies
