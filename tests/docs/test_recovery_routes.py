"""The recovery guide's fallback routes: its table of where another attempt can help is the code's
(``streamfsm.runtime.retry._routes``), row for row. (Its example, and what it prints, is
test_docs_examples'.)"""

from __future__ import annotations

import re
from pathlib import Path

from streamfsm.classify import FailureClass, ProviderErrorKind
from streamfsm.runtime import Help, Need, helps
from streamfsm.runtime.retry._routes import _LOCAL, _PROVIDER, _SILENT_CAUSES, _UNREACHABLE_CAUSES
from tests.support.diagnoses import diagnosis

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guides" / "recovery.md"
HELP = {"the same route, after the wait": Help.SAME, "the next route, now": Help.NEXT, "no route": Help.NONE}
NEED = {
    "any": Need.ANY,
    "a larger `context_window`": Need.LARGER_WINDOW,
    "another `account`": Need.OTHER_ACCOUNT,
}
F = FailureClass
# The rows that are not a provider's error, each with failures of its kind: (class, cause, request sent).
EXAMPLES: dict[str, list[tuple[FailureClass, str, bool]]] = {
    "silent": [
        (F.WATCHDOG, "first_token_timeout", False),
        (F.BEFORE_CONNECTION, "connect_timeout", True),
        (F.EARLY_STREAM, "read_timeout", True),
    ],
    "unreachable": [(F.BEFORE_CONNECTION, cause, False) for cause in ("dns", "tls", "unreachable")],
    "local": [
        (F.LOCAL_ABORT, "user", True),
        (F.CONSUMER_ERROR, "consumer_error", True),
        (F.TOOL_SIDE_EFFECT, "effectful_tool_started", True),
    ],
    "any other break": [
        (F.MID_GENERATION, "closed_mid_body", True),
        (F.WATCHDOG, "idle_timeout", True),
        (F.PROTOCOL_ERROR, "protocol_violation", True),
        (F.BEFORE_CONNECTION, "connect_timeout", False),  # refused before the request left: not silence
    ],
}


def section() -> str:
    text = GUIDE.read_text()
    start = text.index("\n## Fallback routes\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def table() -> dict[str, tuple[str, str, str, str]]:
    lines = section().split("| failure | where the next attempt goes |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in lines.splitlines()[2:]:
        first, where, need, breaker, why = (cell.strip() for cell in line.strip().strip("|").split("|"))
        assert first not in rows, first
        rows[first] = (where.split(" (", 1)[0], need, breaker, why)
    return rows


def test_the_table_is_the_codes_row_for_row() -> None:
    rows = table()
    provider = {key: row for key, row in rows.items() if key.startswith("`provider_error.")}
    assert set(provider) == {f"`provider_error.{kind.value}`" for kind in ProviderErrorKind}
    for kind in ProviderErrorKind:
        where, need, breaker, why = provider[f"`provider_error.{kind.value}`"]
        judged = _PROVIDER[kind]
        assert (HELP[where], NEED[need], breaker == "yes", why) == (
            judged.help,
            judged.need,
            judged.transient,
            judged.why,
        ), kind
    others = {
        key.split(":", 1)[0].split(" (", 1)[0]: (key, row) for key, row in rows.items() if key not in provider
    }
    assert set(others) == set(EXAMPLES)
    for name, failures in EXAMPLES.items():
        _, (where, need, breaker, why) = others[name]
        for failure in failures:
            klass, cause, sent = failure
            judged = helps(diagnosis(klass, cause, delivered=sent))
            assert (HELP[where], NEED[need], breaker == "yes", why) == (
                judged.help,
                judged.need,
                judged.transient,
                judged.why,
            ), (name, failure)
    named = {
        name: set(re.findall(r"`(\w+)`", others[name][0])) for name in ("silent", "unreachable", "local")
    }
    assert named["silent"] == _SILENT_CAUSES
    assert named["unreachable"] == _UNREACHABLE_CAUSES
    assert named["local"] == {klass.value for klass in _LOCAL} - {"completed"}
