"""The route table file (``streamfsm relay --routes``): the relay guide's example loads as documented, and
every mistake is refused with its place named, never with a key in the message."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from streamfsm.relay._table import RouteTable, TableError
from streamfsm.runtime import BREAKERS

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "relay.md"
SECRET = "sk-table-SECRET-0123456789abcdef"


def guide_example() -> dict[str, Any]:
    section = GUIDE.read_text().split("## Route table", 1)[1]
    found = re.search(r"```json\n(.*?)```", section, flags=re.S)
    assert found is not None, "the route table section has its JSON example"
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_the_guides_example_loads_as_the_guide_says(tmp_path: Path) -> None:
    data = guide_example()
    key_file = tmp_path / "gateway-key"
    key_file.write_text("sk-gateway-from-file-0123456789\n")
    assert data["routes"]["backup"]["key_file"] == "/run/secrets/gateway-key"
    data["routes"]["backup"]["key_file"] = str(key_file)  # the one path a test cannot make
    path = tmp_path / "routes.json"
    path.write_text(json.dumps(data))
    table = RouteTable.load(path, environ={"OPENAI_API_KEY": SECRET})
    assert [r.name for r in table.for_model("gpt-4o") or ()] == ["openai", "backup"]
    assert [r.name for r in table.for_model("any-other") or ()] == ["openai", "local"]
    openai, backup = table.for_model("gpt-4o") or ()
    assert openai.headers([(b"authorization", b"Bearer client")]) == [
        (b"authorization", f"Bearer {SECRET}".encode())
    ]
    assert backup.headers([(b"x-api-key", b"client")]) == [(b"api-key", b"sk-gateway-from-file-0123456789")]
    local = table.routes[-1]
    assert local.key is None and local.headers([(b"authorization", b"Bearer c")]) == [
        (b"authorization", b"Bearer c")
    ]
    assert json.loads(backup.body(b'{"model": "gpt-4o", "stream": true}')) == {
        "model": "gpt-4o-2024-08-06",
        "stream": True,
    }
    assert (openai.route.tries, openai.route.first_token_s, backup.route.context_window) == (2, 10, 128000)
    assert (openai.route.payer, backup.route.payer, local.route.payer) == (
        "env:OPENAI_API_KEY",
        "gateway",
        "host:127.0.0.1",
    )
    assert table.breakers is not BREAKERS and table.breakers.cool_down_s == 30 and table.total_s == 30
    assert SECRET not in repr(table) and SECRET not in repr(openai)


def base() -> dict[str, Any]:
    return {"routes": {"r": {"upstream": "https://a.example", "key_env": "K"}}, "models": {"*": ["r"]}}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["routes"]["r"].update(key=SECRET), "routes.r: a key is never written in the table"),
        (lambda d: d["routes"]["r"].update(tries=0), "routes.r: route 'r': tries must be an integer"),
        (lambda d: d["routes"]["r"].update(upstream="ftp://x"), "routes.r.upstream: must be an http://"),
        (
            lambda d: d["routes"]["r"].update(upstream=f"https://user:{SECRET}@a.example/v1"),
            "routes.r.upstream: must be an http:// or https:// URL without credentials",
        ),
        (
            lambda d: d["routes"]["r"].update(upstream=f"https://a.example/v1?key={SECRET}"),
            "not https://a.example",
        ),
        (lambda d: d["routes"]["r"].update(colour="red"), "routes.r.colour: unknown"),
        (lambda d: d["routes"]["r"].update(format="smoke"), "routes.r.format: must be one of"),
        (lambda d: d["routes"]["r"].update(key_env="UNSET"), "the variable UNSET is not set"),
        (lambda d: d["models"].update(m=["nowhere"]), "models.m: names no route 'nowhere'"),
        (lambda d: d["models"].update(m=[]), "models.m: must be a non-empty list"),
        (lambda d: d.update(breakers={"threshold": -1}), "breakers: threshold must be a positive integer"),
        (lambda d: d.update(total_s=0), "total_s: must be a positive number"),
        (lambda d: d.update(extra=1), "extra: unknown key"),
    ],
)
def test_a_mistake_is_refused_with_its_place_named(tmp_path: Path, change: Any, message: str) -> None:
    data = base()
    change(data)
    path = tmp_path / "routes.json"
    path.write_text(json.dumps(data, indent=2))
    with pytest.raises(TableError) as refused:
        RouteTable.load(path, environ={"K": SECRET})
    assert str(refused.value).startswith(str(path)) and message in str(refused.value)
    assert SECRET not in str(refused.value)


def test_not_json_or_a_key_twice_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "routes.json"
    path.write_text('{\n  "routes": {\n    "r": {"upstream": "https://a.example",}\n  }\n}\n')
    with pytest.raises(TableError, match=r"line 3 column \d+: not JSON"):
        RouteTable.load(path)
    path.write_text('{\n  "routes": {},\n  "models": {},\n  "models": {}\n}\n')
    with pytest.raises(TableError, match=r"line 4: 'models' is given twice"):
        RouteTable.load(path)
    path.write_text(json.dumps(base(), indent=2).replace('"key_env": "K"', '"key_env": "K", "tries": "x"'))
    with pytest.raises(TableError, match=r"line 3: routes.r: route 'r': tries must be"):
        RouteTable.load(path, environ={"K": SECRET})


def test_a_key_file_that_is_missing_or_empty_is_named(tmp_path: Path) -> None:
    data = base()
    data["routes"]["r"] = {"upstream": "https://a.example", "key_file": str(tmp_path / "none")}
    with pytest.raises(TableError, match=r"routes.r.key_file: .*none cannot be read"):
        RouteTable.from_dict(data)
    (tmp_path / "empty").write_text("\n")
    data["routes"]["r"]["key_file"] = str(tmp_path / "empty")
    with pytest.raises(TableError, match=r"routes.r.key_file: .*empty is empty"):
        RouteTable.from_dict(data)


def test_the_command_refuses_a_bad_table_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    data = base()
    data["routes"]["r"]["tries"] = 99
    path = tmp_path / "routes.json"
    path.write_text(json.dumps(data))
    command = [
        sys.executable,
        "-m",
        "streamfsm",
        "relay",
        "--upstream",
        "http://127.0.0.1:9",
        "--routes",
        str(path),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env={"K": SECRET, "PATH": ""})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"streamfsm relay: {path}, line 1: routes.r: route 'r': tries must be an integer from 1 to 32, not 99"
    ]
