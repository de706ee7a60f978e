"""A format is one object in one registry, the test kit's builders included.

Every registered ``Format`` supplies every slot (its adapter, framing, probe request, key header, resume and
SDK side when it has them, and the kit of builders the test kit reads), and the package's source compares no
value with a format's name outside the registry, the adapters and the format's scenarios: what the house knows
of a format it reads from the registry. Adding an HTTP format then touches the registry, its adapter module
and its scenarios (its kit's entry in ``testing/_kits.py`` among them), nothing else.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import streamfsm
from streamfsm.runtime.drivers._sdk import SDK_FORMAT_NAMES
from streamfsm.testing._kit import FormatKit, kit_of
from streamfsm.testing._wire import EVENT_STREAM_FORMATS, NDJSON_FORMATS, WIRE_FORMATS
from streamfsm.testing._wire import SSE_FORMATS as SSE_FORMATS
from streamfsm.wire import (
    FORMATS,
    Finish,
    FinishReason,
    Prefill,
    Probe,
    Resume,
    SdkSide,
    TextDelta,
    adapter_for,
)

NAMES = sorted(FORMATS)
PACKAGE = Path(streamfsm.__file__).parent

# Where a format's name may be compared with: the registry and the adapters (and the scenarios below).
OWNERS = ("wire/_formats.py", "wire/_adapters/")
# Scenario modules still dispatching by a format's name, and how often: the count may only go down (a
# scenario builder that moves onto its kit lowers it here).
SCENARIO_DISPATCH = {"testing/_scenarios.py": 46, "testing/_tool_kinds.py": 2}
# SDK packages whose names are formats' too: comparing an SDK's name is not comparing a format.
_NOT_A_FORMAT = re.compile(r"\b(sdk|top|package)\s*[!=]=\s*$")


def _format_names() -> str:
    return "|".join(re.escape(name) for name in sorted(FORMATS, key=len, reverse=True))


_QUOTED = rf"""["']({_format_names()})["']"""
# `x == "gemini"`, `"gemini" != x`, `x in ("anthropic", ...)`, and a table keyed by a format (`"ollama": ...`)
_COMPARED = re.compile(rf"(?P<left>[!=]=\s*){_QUOTED}|{_QUOTED}\s*[!=]=|\bin\s*[(\[{{]\s*{_QUOTED}")
_KEYED = re.compile(rf"^\s*{_QUOTED}\s*:")


def _dispatches(text: str) -> int:
    count = 0
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        for match in _COMPARED.finditer(code):
            left = match.group("left")
            if left is not None and _NOT_A_FORMAT.search(code[: match.start("left") + len(left)]):
                continue
            count += 1
        count += bool(_KEYED.match(code))
    return count


def _counts() -> dict[str, int]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(OWNERS):
            continue
        count = _dispatches(path.read_text(encoding="utf-8"))
        if count:
            out[rel] = count
    return out


def test_the_count_sees_what_it_counts() -> None:
    """The check is not blind: each shape of dispatch is counted, an SDK's name is not."""
    text = "\n".join(
        [
            'if fmt == "anthropic": pass',
            'if "gemini" != name: pass',
            'x = provider in ("ollama", "openai-chat")',
            "TABLE = {",
            '    "bedrock-converse": 1,',
            'if sdk == "anthropic": pass',
            'if fmt == "openai": pass',
        ]
    )
    assert _dispatches(text) == 4


def test_no_format_is_known_outside_the_registry_its_adapters_and_its_scenarios() -> None:
    counts = _counts()
    outside = {rel: n for rel, n in counts.items() if rel not in SCENARIO_DISPATCH}
    assert outside == {}, "a format's name compared outside the registry: read its Format (or kit) instead"
    assert {rel: counts.get(rel, 0) for rel in SCENARIO_DISPATCH} == SCENARIO_DISPATCH


def test_no_docstring_counts_the_formats_wrong() -> None:
    words = re.compile(r"\b(two|three|four|five|six|eight)\s+(wire\s+|provider\s+)?formats\b", re.IGNORECASE)
    found = [
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if words.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []


@pytest.mark.parametrize("name", NAMES)
def test_every_format_supplies_every_slot(name: str) -> None:
    fmt = FORMATS[name]
    assert isinstance(fmt.probe, Probe) and isinstance(fmt.prefill, Prefill)
    body = fmt.probe.body("a-model", "hi")
    assert body["model"] == "a-model" and "hi" in repr(body)
    assert set(fmt.probe.tools([{"name": "t"}])) <= {"tools", "toolConfig"}
    assert re.fullmatch(r"[a-z][a-z-]*", fmt.key_header)
    assert fmt.resume is None or isinstance(fmt.resume, Resume)
    if fmt.sdk is not None:
        assert isinstance(fmt.sdk, SdkSide) and issubclass(fmt.sdk.translator, fmt.adapter)
    kit = kit_of(name)
    assert isinstance(kit, FormatKit) and kit.body and kit.keepalive


@pytest.mark.parametrize("name", NAMES)
def test_a_formats_kit_speaks_its_wire(name: str) -> None:
    """The kit's stream of a format, framed and decoded by its registry entry, is the text and a finish."""
    fmt = FORMATS[name]
    framing, adapter = fmt.framing(1 << 20), adapter_for(name)
    events = []
    options = {"usage": True, "finish": None, "parallel": True, "reasoning_key": "reasoning"}
    for frame in kit_of(name).stream([("text", "Hi")], **options, background=False, generate=False):
        for decoded in framing.feed(frame):
            events += adapter.feed(decoded)
    assert not framing.close() and not framing.truncated
    events += adapter.end()
    assert "".join(event.text for event in events if isinstance(event, TextDelta)) == "Hi"
    finishes = [event for event in events if isinstance(event, Finish)]
    assert [finish.reason for finish in finishes] == [FinishReason.STOP]


def test_what_reads_the_registry_agrees_with_it() -> None:
    assert tuple(name for name, fmt in FORMATS.items() if fmt.sdk is not None) == SDK_FORMAT_NAMES
    assert tuple(FORMATS) == WIRE_FORMATS
    assert sorted((*SSE_FORMATS, *NDJSON_FORMATS, *EVENT_STREAM_FORMATS)) == NAMES
    resumable = [name for name, fmt in FORMATS.items() if fmt.resume is not None]
    assert resumable == ["openai-responses"]  # the one format whose provider keeps a cursor we can reach
