"""The command line as a Unix tool: a closed pipe, unreadable input, --version, --help, exit codes, bounds,
table widths, absent values."""

from __future__ import annotations

import ast
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import streamfsm
from streamfsm.cli import build_parser, main
from streamfsm.cli._common import EXIT_CODES, STARTUP_FAILED

COMMANDS = ("diagram", "harness", "probe", "diagnose", "report", "relay", "fault-server")


def _cli(*args: str, columns: int | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "streamfsm", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real records: the openai-chat scenarios played against the local fault provider."""
    path = tmp_path_factory.mktemp("cli") / "runs.jsonl"
    code = main(["harness", "--format", "openai-chat", "--json", str(path)])
    assert code == 0
    assert len(path.read_text().splitlines()) > 30
    return path


# -- 8: a closed pipe ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [("harness", "--list"), ("diagnose", "LOG", "--last", "5"), ("report", "LOG")],
)
def test_a_reader_that_left_ends_the_command_quietly(log: Path, args: tuple[str, ...]) -> None:
    # The reader is gone before the first write (as `| head -1` is once it has its line): a closed pipe,
    # deterministically, whatever the platform's pipe buffer holds.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "streamfsm", *(str(log) if a == "LOG" else a for a in args)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    err = proc.stderr.decode()
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err
    assert proc.returncode == 141


# -- 9: unreadable input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["diagnose", "report"])
def test_skipped_lines_are_summarised(tmp_path: Path, command: str) -> None:
    binary = tmp_path / "binary.log"
    binary.write_bytes(b"\x00\x01\x02binary\xff\n" * 5_000)
    result = _cli(command, str(binary))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) <= 6, lines
    assert sum("line is not valid JSON" in line for line in lines) == 3
    assert "skipped 5000 unreadable parts" in result.stderr and "4997 more not shown" in result.stderr


def test_json_keeps_the_first_hundred_problems_and_the_total(tmp_path: Path, log: Path) -> None:
    mixed = tmp_path / "mixed.log"
    mixed.write_text(log.read_text() + "not json\n" * 300)
    result = _cli("diagnose", str(mixed), "--json")
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert (len(data["problems"]), data["problems_total"]) == (100, 300)


# -- 10: --version, --help, exit codes, bounds, widths, absent values ------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"streamfsm {streamfsm.__version__}"


def test_the_changelog_names_the_version_first_and_the_license_is_mit() -> None:
    root = Path(__file__).resolve().parents[2]
    changelog = (root / "CHANGELOG.md").read_text()
    first = re.search(r"^## (\S+) ", changelog, flags=re.M)
    assert first is not None and first.group(1) == streamfsm.__version__
    assert re.search(r'^license = "MIT"$', (root / "pyproject.toml").read_text(), flags=re.M)
    assert (root / "LICENSE").read_text().startswith("MIT License\n")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_a_description_and_its_exit_codes(command: str) -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]  # type: ignore[index]
    text = sub.format_help()
    assert sub.description and len(sub.description) > 40
    for code in ("0  done", "1  the answer is no", "2  usage"):
        assert code in text, text
    assert "`" not in text, text  # no reStructuredText markup from a docstring


def test_the_main_help_lists_exit_codes() -> None:
    assert "exit status:" in build_parser().format_help()


def _returned_codes(function: ast.FunctionDef, constants: dict[str, int]) -> set[int]:
    """The exit statuses a command function returns as literals or named constants."""
    codes: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None:
            values = (
                [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            )
            for value in values:
                if isinstance(value, ast.Constant) and isinstance(value.value, int):
                    codes.add(value.value)
                elif isinstance(value, ast.Name) and value.id in constants:
                    codes.add(constants[value.id])
    return codes


def test_the_exit_codes_listed_are_the_ones_the_commands_return() -> None:
    listed = {int(m) for m in re.findall(r"^  (\d+) ", EXIT_CODES, flags=re.M)}
    constants = {"STARTUP_FAILED": STARTUP_FAILED}
    returned: set[int] = {2}  # argparse's own usage error
    for path in sorted((Path(streamfsm.__file__).parent / "cli").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module constants: NAME = 141
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if isinstance(node.value.value, int) and isinstance(targets[0], ast.Name):
                    constants[targets[0].id] = node.value.value
        for node in ast.walk(tree):
            # the commands' functions: they return an exit status (not the int parsers and widths)
            command = isinstance(node, ast.FunctionDef) and not node.name.startswith(("positive", "table"))
            if command and node.returns is not None and ast.unparse(node.returns) == "int":
                returned |= _returned_codes(node, constants)
    assert returned == listed


RELAY = [sys.executable, "-m", "streamfsm", "relay"]


def test_a_relay_that_cannot_bind_exits_3_as_its_help_says(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    assert "  3  relay, fault-server: the server could not start" in EXIT_CODES
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*RELAY, "--upstream", "http://127.0.0.1:9", "--listen", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=tmp_path,
        )
    assert done.returncode == STARTUP_FAILED == 3, done.stderr
    assert f"could not serve on 127.0.0.1:{port}" in done.stderr


def test_a_run_id_that_is_empty_is_usage_like_an_ambiguous_one_and_unknown_is_no(
    log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", str(log), "--run", ""])
    assert exc.value.code == 2
    assert "--run: must not be empty" in capsys.readouterr().err
    assert main(["diagnose", str(log), "--run", "no-such-run"]) == 1
    assert "no record with run id" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
@pytest.mark.parametrize("option", [("harness", "--timeout"), ("probe", "--timeout-idle")])
def test_timeouts_must_be_positive(
    value: str, option: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    command, flag = option
    extra = ["--provider", "openai-chat", "--base-url", "http://127.0.0.1:9", "--model", "m"]
    with pytest.raises(SystemExit) as exc:
        main([command, *(extra if command == "probe" else []), f"{flag}={value}"])
    assert exc.value.code == 2
    assert "positive number of seconds" in capsys.readouterr().err or value == "soon"


def test_diagram_check_says_missing_for_a_missing_file(tmp_path: Path) -> None:
    assert main(["diagram", "--out", str(tmp_path)]) == 0
    (tmp_path / "activity.mmd").unlink()
    result = _cli("diagram", "--check", "--out", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"missing: {tmp_path / 'activity.mmd'}"]


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_tables_fit_the_terminal_and_wide_prints_them_whole(log: Path, columns: int) -> None:
    harness = _cli("harness", "--format", "openai-chat", columns=columns)
    report = _cli("report", str(log), columns=columns)
    for result, skip in ((harness, 0), (report, 2)):  # the report's heading names the file: not table
        assert result.returncode == 0, result.stderr
        assert max(map(len, result.stdout.splitlines()[skip:])) <= columns
    wide = _cli("report", str(log), "--wide", columns=columns)
    assert max(map(len, wide.stdout.splitlines())) > 120
    assert "WHAT HAPPENED" in wide.stdout and "FIRST SEEN (UTC)" in wide.stdout


def test_absent_values_print_a_dash(log: Path) -> None:
    refused = next(
        json.loads(line)
        for line in log.read_text().splitlines()
        if json.loads(line)["timings"]["to_headers_s"] is None
    )
    result = _cli("diagnose", str(log), "--run", refused["ids"]["run_id"])
    assert result.returncode == 0
    wanted = ("http status", "tokens")
    facts = dict(line.split("  ", 1) for line in result.stdout.splitlines() if line.startswith(wanted))
    assert {key: value.strip() for key, value in facts.items()} == {"http status": "-", "tokens": "-"}
    assert "None" not in result.stdout and "—" not in result.stdout
