"""``diagrams/`` is generated: it must be fresh, complete and deterministic."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from streamfsm import cli, diagrams
from streamfsm.classify import diagnose
from streamfsm.diagrams import ANY_FAILURE, FILES, DiagramError, stale_diagrams, write_diagrams
from streamfsm.machine import FAILURE_TRIGGERS, REACHABLE_STATES, Activity, Commitment, Trigger

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "diagrams"
FAILURES = [t for t in Trigger if t in FAILURE_TRIGGERS]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("diagrams")
    write_diagrams(out)
    return out


def test_committed_diagrams_are_fresh(fresh: Path) -> None:
    stale = [
        name
        for name in FILES
        if not (COMMITTED / name).is_file() or (COMMITTED / name).read_bytes() != (fresh / name).read_bytes()
    ]
    assert not stale, (
        f"diagrams/ is stale ({', '.join(stale)}): run `streamfsm diagram` and commit the result"
    )
    assert stale_diagrams(COMMITTED) == []


def test_writes_exactly_the_declared_files(fresh: Path) -> None:
    assert sorted(p.name for p in fresh.iterdir()) == sorted(FILES)


def test_output_is_deterministic_and_portable(fresh: Path, tmp_path: Path) -> None:
    # A second run (in another folder, another process with another hash seed) gives the same bytes.
    other = tmp_path / "again"
    subprocess.run(
        [sys.executable, "-m", "streamfsm", "diagram", "--out", str(other)],
        check=True,
        cwd=ROOT,
        env={"PYTHONHASHSEED": "12345", "PATH": "", "PYTHONPATH": str(ROOT)},
        capture_output=True,
    )
    for name in FILES:
        text = (fresh / name).read_bytes()
        assert (other / name).read_bytes() == text, name
        assert text.endswith(b"\n"), name
        assert not text.endswith(b"\n\n"), name
        assert b"\r" not in text
        assert str(fresh).encode() not in text, name
        assert str(ROOT).encode() not in text, name
        assert not re.search(rb"\d{4}-\d{2}-\d{2}", text), f"{name} carries a date"


def test_mermaid_names_every_state_and_trigger(fresh: Path) -> None:
    activity = (fresh / "activity.mmd").read_text()
    commitment = (fresh / "commitment.mmd").read_text()
    for state in Activity:
        assert re.search(rf'^  state "{state.value}" as {state.value}$', activity, re.M), state
    for commitment_state in Commitment:
        assert f'state "{commitment_state.value}" as {commitment_state.value}' in commitment
    for trigger in Trigger:
        assert re.search(rf"\b{trigger.value}\b", activity), trigger
    assert "[*] --> idle" in activity
    assert "[*] --> none" in commitment


def test_mermaid_is_tidied_for_code_hosts(fresh: Path) -> None:
    for name in ("activity.mmd", "commitment.mmd"):
        text = (fresh / name).read_text()
        assert text.startswith(f"---\ntitle: {name.removesuffix('.mmd')}\n---\nstateDiagram-v2\n")
        assert "classDef" not in text
        assert "Class " not in text
        assert "s_active" not in text
    activity = (fresh / "activity.mmd").read_text()
    # Every failure edge collapses to one label, once per non-terminal state.
    failure_edges = re.findall(r"^  (\w+) --> failed: (.+)$", activity, re.M)
    assert sorted(src for src, _ in failure_edges) == sorted(a.value for a in Activity if not a.is_terminal)
    assert {label for _, label in failure_edges} == {ANY_FAILURE}
    for trigger in FAILURES:
        assert not re.search(rf"-->.*\b{trigger.value}\b", activity), f"{trigger.value} left on an edge"


def test_dot_is_tidied(fresh: Path) -> None:
    activity = (fresh / "activity.dot").read_text()
    assert activity.startswith("digraph activity {\n")
    assert "darksalmon" not in activity
    assert "__start -> idle" in activity
    assert activity.count(f'[label="{ANY_FAILURE}"]') == sum(1 for a in Activity if not a.is_terminal)
    commitment = (fresh / "commitment.dot").read_text()
    assert 'none -> visible [label="text_delta"]' in commitment


def test_readme_embeds_both_mermaid_diagrams(fresh: Path) -> None:
    readme = (fresh / "README.md").read_text()
    blocks = re.findall(r"```mermaid\n(.*?)```", readme, re.S)
    assert blocks == [(fresh / "activity.mmd").read_text(), (fresh / "commitment.mmd").read_text()]
    for state in [*Activity, *Commitment]:
        assert f"| `{state.value}` |" in readme, state


def test_classification_table_has_one_row_per_state_and_failure_edge(fresh: Path) -> None:
    rows = [line for line in (fresh / "classification.md").read_text().splitlines() if line.startswith("| `")]
    states = [s for s in REACHABLE_STATES if not s.is_terminal]
    assert len(rows) == len(states) * len(FAILURES) == 14 * 13
    cells = [[c.strip().strip("`") for c in row.strip("|").split(" | ")] for row in rows]
    assert len({(c[0], c[1]) for c in cells}) == len(rows)
    by_key = {(str(s), t.value): (s, t) for s in states for t in FAILURES}
    for state_name, edge_name, klass, key, verdict, action, title in cells:
        d = diagnose(*by_key[state_name, edge_name])
        assert (klass, key, verdict, action, title) == (
            d.failure_class.value,
            d.summary_key,
            d.verdict.value,
            d.action.value,
            d.title,
        )


def test_missing_graphviz_fails_clearly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write_diagrams(tmp_path)
    monkeypatch.setitem(sys.modules, "graphviz", None)  # makes ``import graphviz`` raise ImportError
    with pytest.raises(DiagramError, match=r"pip install 'streamfsm\[diagrams\]'"):
        write_diagrams(tmp_path / "new")
    assert not (tmp_path / "new").exists()
    stale = stale_diagrams(tmp_path)
    assert stale == [
        f"{name} (cannot check: {diagrams._GRAPHVIZ_MISSING})" for name in ("activity.dot", "commitment.dot")
    ]
    assert cli.main(["diagram", "--out", str(tmp_path / "new")]) == 2


def test_stale_check_names_missing_and_changed_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_diagrams(tmp_path)
    assert cli.main(["diagram", "--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "activity.mmd").write_text("stateDiagram-v2\n")
    (tmp_path / "classification.md").unlink()
    assert stale_diagrams(tmp_path) == ["activity.mmd", "classification.md"]
    assert cli.main(["diagram", "--check", "--out", str(tmp_path)]) == 1
    assert "stale: " in capsys.readouterr().err


def test_the_rooms_picture_is_read_from_the_imports(tmp_path: Path) -> None:
    # cli imports machine directly and through classify: only the two arrows the path needs are drawn.
    package = tmp_path / "streamfsm"
    for room, text in {
        "machine": "",
        "classify": "from ..machine import State\n",
        "cli": "from ..classify import diagnose\ndef f():\n    from streamfsm.machine._x import X\n",
    }.items():
        (package / room).mkdir(parents=True)
        (package / room / "__init__.py").write_text(text)
    edges = diagrams._room_imports(package)
    assert edges["cli"] == {"classify", "machine"}
    assert diagrams._reduced(edges) == [("classify", "cli"), ("machine", "classify")]
    assert '"machine" -> "classify";' in diagrams.rooms_dot(package)
    assert '"machine" -> "cli";' not in diagrams.rooms_dot(package)


def test_every_arrow_of_the_rooms_runs_one_way() -> None:
    order = list(diagrams.ROOMS)
    arrows = diagrams._reduced(diagrams._room_imports(ROOT / "streamfsm"))
    assert arrows, "no arrows: the picture would say nothing"
    assert all(order.index(a) < order.index(b) for a, b in arrows), arrows
    assert {room for arrow in arrows for room in arrow} == set(order)
