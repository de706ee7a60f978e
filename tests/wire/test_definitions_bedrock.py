"""The Bedrock formats decide every member botocore's ``bedrock-runtime`` service model defines: Converse's
stream events (``ConverseStreamOutput``, exceptions included) and their members, the block starts and deltas,
the reasoning members, the tool-use types and tool-result statuses, the stop reasons and the usage; and for
Claude on Bedrock, the envelope (``ResponseStream``: ``chunk`` and its exceptions). A botocore release that
adds one fails here, naming it. The adapter follows the table."""

from __future__ import annotations

import json
from typing import Any

import pytest

from streamfsm.wire import FORMATS, UNREAD_CONTENT, Decision, Frame, adapter_for, undecided

botocore_session = pytest.importorskip(
    "botocore.session", reason="the bedrock extra (botocore) is not installed"
)

MODEL = botocore_session.get_session().get_service_model("bedrock-runtime")


def _members(shape: str) -> list[str]:
    return list(MODEL.shape_for(shape).members)


def _events() -> set[str]:
    out = set(_members("ConverseStreamOutput"))
    for event in (
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
    ):
        shape = MODEL.shape_for("ConverseStreamOutput").members[event]
        out |= {f"{event}.{member}" for member in shape.members}
    out |= {f"metadata.{member}" for member in _members("ConverseStreamMetadataEvent")}
    out |= {f"usage.{member}" for member in _members("TokenUsage")}
    return out


def _content() -> set[str]:
    out = {f"start.{member}" for member in _members("ContentBlockStart")}
    out |= {f"delta.{member}" for member in _members("ContentBlockDelta")}
    out |= {f"delta.reasoningContent.{member}" for member in _members("ReasoningContentBlockDelta")}
    return out


def _tools() -> set[str]:
    out = {"toolUse"}
    out |= {f"toolUse.{value}" for value in MODEL.shape_for("ToolUseType").enum}
    out |= {f"toolResult.{value}" for value in MODEL.shape_for("ToolResultStatus").enum}
    return out


def _finishes() -> set[str]:
    return set(MODEL.shape_for("StopReason").enum)


WALKS = {"events": _events, "content": _content, "tools": _tools, "finishes": _finishes}


@pytest.mark.parametrize("table", sorted(WALKS))
def test_every_member_converse_defines_has_a_decision(table: str) -> None:
    members = WALKS[table]()
    missing = undecided(members, FORMATS["bedrock-converse"].definitions.tables()[table])
    assert not missing, f"botocore's bedrock-runtime model defines {table} with no decision: {missing}"


def test_every_member_of_claudes_envelope_has_a_decision() -> None:
    members = set(_members("ResponseStream"))
    missing = undecided(members, FORMATS["anthropic-bedrock"].definitions.events)
    assert not missing, f"botocore's bedrock-runtime ResponseStream has members with no decision: {missing}"


def test_every_decision_names_its_source() -> None:
    for name in ("bedrock-converse", "anthropic-bedrock"):
        for table in FORMATS[name].definitions.tables().values():
            assert table and all(decided.source and decided.means for decided in table.values())


def test_the_converse_adapter_reads_what_the_table_reads() -> None:
    from streamfsm.wire._adapters import _bedrock_converse as converse

    read = {
        member
        for member, decided in converse.EVENTS.items()
        if decided.decision is Decision.READ and "." not in member
    }
    assert read == set(converse._HANDLERS) | set(converse._EXCEPTIONS)
    assert set(converse._FINISH) == set(converse.FINISHES)
    assert converse.BedrockConverseAdapter.whole_answers < set(converse._FINISH)


def _frames(start: dict[str, Any], deltas: list[dict[str, Any]], stop: str = "end_turn") -> list[Frame]:
    events: list[dict[str, Any]] = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 0, "start": start}},
        *({"contentBlockDelta": {"contentBlockIndex": 0, "delta": delta}} for delta in deltas),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"text": "Done."}}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"messageStop": {"stopReason": stop}},
        {"metadata": {"usage": {"inputTokens": 3, "outputTokens": 2, "cacheReadInputTokens": 5}}},
    ]
    return [Frame(json.dumps(event)) for event in events]


def _informational(prefix: str) -> list[str]:
    from streamfsm.wire._adapters import _bedrock_converse as converse

    return sorted(
        member.removeprefix(prefix)
        for member, decided in converse.CONTENT.items()
        if decided.decision is Decision.INFORMATIONAL and member.count(".") == 1 and member.startswith(prefix)
    )


@pytest.mark.parametrize("kind", _informational("delta."))
def test_an_informational_delta_is_counted_never_unread(kind: str) -> None:
    adapter = adapter_for("bedrock-converse")
    for frame in _frames({}, [{kind: {"text": "x"}}]):
        adapter.feed(frame)
    assert adapter.delta_keys.get(kind) == 1 and UNREAD_CONTENT not in adapter.anomalies


@pytest.mark.parametrize("kind", _informational("start."))
def test_an_informational_block_is_counted_never_unread(kind: str) -> None:
    adapter = adapter_for("bedrock-converse")
    for frame in _frames({kind: {"toolUseId": "srv_1", "type": "web_search", "status": "error"}}, []):
        adapter.feed(frame)
    assert adapter.delta_keys.get(f"start.{kind}") == 1 and adapter.delta_keys.get(f"{kind}.error") == 1
    assert UNREAD_CONTENT not in adapter.anomalies


def test_reasoning_members_are_read_as_the_table_says() -> None:
    adapter = adapter_for("bedrock-converse")
    reasoning = [{"reasoningContent": {"text": "Hm."}}, {"reasoningContent": {"signature": "c2ln"}}]
    reasoning.append({"reasoningContent": {"redactedContent": "ZW5j"}})
    events = [event for frame in _frames({}, reasoning) for event in adapter.feed(frame)]
    assert [type(e).__name__ for e in events].count("ReasoningDelta") == 2  # the text, the redacted
    assert UNREAD_CONTENT not in adapter.anomalies


def test_a_member_nobody_decided_or_not_understood_is_unread_content() -> None:
    for start, deltas in (({"hologram": {}}, []), ({}, [{"smell": "x"}]), ({"image": {"format": "png"}}, [])):
        adapter = adapter_for("bedrock-converse")
        for frame in _frames(start, deltas):
            adapter.feed(frame)
        assert adapter.anomalies.get(UNREAD_CONTENT) == 1


@pytest.mark.parametrize(
    "name", sorted(m for m in _members("ConverseStreamOutput") if m.endswith("Exception"))
)
def test_every_exception_member_is_the_providers_error_however_it_is_framed(name: str) -> None:
    from streamfsm.wire import ProviderErrorEvent

    body = {"message": "The model stream failed."}
    unnamed = adapter_for("bedrock-converse").feed(Frame(json.dumps({name: body})))  # {name: body}
    named = adapter_for("bedrock-converse").feed(Frame(json.dumps(body), name))  # its event type
    assert [type(e) for e in unnamed] == [type(e) for e in named] == [ProviderErrorEvent]
    assert unnamed[0].error.type == named[0].error.type == name  # type: ignore[attr-defined]
