"""The documentation site: it builds strictly from the code (in a fresh venv holding the docs extra alone, as
the README's recipe makes it), renders offline in headless Chromium (the
distribution's package), its search works and its pictures follow the declaration. (Its code examples:
test_docs_examples.py, which needs no docs extra.)"""

from __future__ import annotations

import functools
import html
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="the docs extra is not installed in this venv")
pytest.importorskip("material", reason="the docs extra is not installed in this venv")

from tests.support.cdp import Browser, Page, chromium

ROOT = Path(__file__).resolve().parents[2]
# The pages a reader sees at 1280 px, kept in docs/ (STREAMFSM_WRITE_DOCS=1 retakes them; the relay's run page
# is tests/relay/test_errors_page.py's docs/relay-errors-page.png)
SCREENSHOTS = {
    "machine/": ROOT / "docs" / "site-machine.png",
    "machine/generating/": ROOT / "docs" / "site-state.png",
}
BUILD_S = 180
INSTALL_S = 600


def readme_command() -> tuple[dict[str, str], list[str]]:
    """The docs build as the README writes it: its variables and its arguments."""
    found = re.search(r"`((?:[A-Z0-9_]+=\S* )*)mkdocs build([^`]*)`", (ROOT / "README.md").read_text())
    assert found is not None, "the README's docs command is gone"
    variables = dict(word.split("=", 1) for word in found[1].split())
    return variables, found[2].split()


def build(
    root: Path,
    out: Path,
    *,
    python: str = sys.executable,
    pythonpath: Path | None = None,
    path: str = "/usr/bin:/bin",
) -> subprocess.CompletedProcess[str]:
    variables, arguments = readme_command()
    env = {"PATH": path, "HOME": str(out.parent), **variables}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        # not -q: it hides the warnings that --strict counts
        [python, "-m", "mkdocs", "build", *arguments, "-d", str(out)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_S,
        check=False,
    )


@pytest.fixture(scope="module")
def docs_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The Python of a fresh venv holding the package with its docs extra alone, as the README's recipe
    makes it (pip's cache keeps this to seconds once the extra was downloaded)."""
    venv = tmp_path_factory.mktemp("docs-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=INSTALL_S)
    python = str(venv / "bin" / "python")
    install = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-e", f"{ROOT}[docs]"]
    done = subprocess.run(install, capture_output=True, text=True, timeout=INSTALL_S, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return python


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, docs_python: str) -> tuple[Path, str]:
    """The site, built by the README's command, and what the build printed."""
    out = tmp_path_factory.mktemp("site") / "site"
    done = build(ROOT, out, python=docs_python)
    assert done.returncode == 0, done.stderr
    return out, done.stdout + done.stderr


@pytest.fixture(scope="module")
def site(built: tuple[Path, str]) -> Path:
    return built[0]


def copy_of_project(to: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", ".hypothesis")
    for name in ("streamfsm", "docs", "tests"):
        shutil.copytree(ROOT / name, to / name, ignore=ignore)
    shutil.copy(ROOT / "mkdocs.yml", to / "mkdocs.yml")
    return to


# -- the build ----------------------------------------------------------------------------------------------


def test_every_page_and_picture_is_built(site: Path) -> None:
    from streamfsm.machine import Activity

    for page in ["", "machine", "machine/invariants", "taxonomy", "reference", "reference/testing"]:
        assert (site / page / "index.html").is_file(), page
    for activity in Activity:
        page = (site / "machine" / activity.value / "index.html").read_text()
        assert f"<code>{activity.value}</code>" in page
    for name in ("activity", "commitment"):
        picture = (site / "machine" / f"{name}.svg").read_text()
        assert picture.startswith("<?xml") and "<svg" in picture and "</svg>" in picture
    assert (
        "<title>tool_input_open&#45;&gt;tool_call</title>" in (site / "machine" / "activity.svg").read_text()
    )


def test_the_readmes_command_builds_strictly_and_says_nothing_but_progress(built: tuple[Path, str]) -> None:
    """As the README writes it: strict, no theme's notice, every page in the nav (mkdocs says which pages
    are not, at INFO, which --strict lets pass)."""
    assert "--strict" in readme_command()[1]
    printed = built[1]
    assert "end of life" not in printed and "not included in the" not in printed, printed
    lines = [line for line in printed.splitlines() if line.strip()]
    assert lines and all(line.startswith("INFO") for line in lines), printed


def test_the_reference_lists_what_a_class_inherits(site: Path) -> None:
    # The reference lists a class's members, inherited ones too; RetryingRun's tool and abort are its own.
    reference = (site / "reference" / "index.html").read_text()
    for method in ("streamfsm.RetryingRun.tool_started", "streamfsm.RetryingRun.abort"):
        assert f'id="{method}"' in reference, method


def test_a_page_per_format_comes_from_the_registry(site: Path) -> None:
    from streamfsm.testing import catalog
    from streamfsm.wire import FORMATS

    index = (site / "formats" / "index.html").read_text()
    for fmt in FORMATS.values():
        assert f'href="{fmt.name}/"' in index, fmt.name
        page = (site / "formats" / fmt.name / "index.html").read_text()
        assert all(f"<code>{reason}</code>" in page for reason in fmt.whole_answers), fmt.name
        assert f"<code>{fmt.otel_name}</code>" in page
        named = [s.name.partition("/")[2] for s in catalog() if s.format == fmt.name]
        assert named and all(f"<code>{name}</code>" in page for name in named), fmt.name
        decided = [html.escape(m) for table in fmt.definitions.tables().values() for m in table]
        assert decided, f"{fmt.name}: no decisions on what its provider defines"
        assert all(f"<code>{member}</code>" in page for member in decided), fmt.name


def test_without_dot_the_build_says_what_to_install_in_one_line(docs_python: str, tmp_path: Path) -> None:
    done = build(ROOT, tmp_path / "out", python=docs_python, path=str(tmp_path))  # a PATH without dot
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1, done.stderr
    assert "Graphviz's dot program" in errors[0]
    assert "apt-get install graphviz" in errors[0] and "brew install graphviz" in errors[0]


def test_generated_tables_come_from_the_classifier(site: Path) -> None:
    from streamfsm.classify import Facts, FailureClass, diagnose
    from streamfsm.machine import Activity, Commitment, State, Trigger

    page = (site / "machine" / "tool_input_open" / "index.html").read_text()
    d = diagnose(State(Activity.TOOL_INPUT_OPEN, Commitment.VISIBLE), Trigger.DISCONNECTED, Facts())
    assert f"<code>{d.summary_key}</code>" in page
    assert "tool_side_effect" not in page  # invariant 5, as the page shows it
    taxonomy = (site / "taxonomy" / "index.html").read_text()
    for klass in FailureClass:
        assert f'id="{klass.value}"' in taxonomy, klass
    assert "openai-chat/http-429-retry-after-ms" in taxonomy  # a catalog example, with its wire
    assert "HTTP 429\ncontent-type: application/json" in taxonomy
    from streamfsm.classify._provider import EVIDENCE

    # the evidence table that reads a provider error, row by row, in order
    table = taxonomy[taxonomy.index('id="provider-error-words"') :]
    at = [table.find(f"<td><code>{row.name}</code></td>") for row in EVIDENCE]
    assert -1 not in at and at == sorted(at), at


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    project = copy_of_project(tmp_path / "project")
    (project / "docs" / "index.md").write_text("# streamfsm\n\nSee [the missing page](nowhere.md).\n")
    done = build(project, tmp_path / "out", pythonpath=project)
    assert done.returncode != 0
    assert "nowhere.md" in done.stderr


def test_a_hand_made_copy_of_a_generated_page_fails_the_build(tmp_path: Path) -> None:
    project = copy_of_project(tmp_path / "project")
    (project / "docs" / "taxonomy.md").write_text("# stale\n")
    done = build(project, tmp_path / "out", pythonpath=project)
    assert done.returncode != 0
    assert "docs/taxonomy.md is generated at build time" in done.stderr


def test_changing_a_transition_changes_the_picture(site: Path, tmp_path: Path) -> None:
    project = copy_of_project(tmp_path / "project")
    declaration = project / "streamfsm" / "machine" / "_declaration.py"
    edge = "(Trigger.TOOL_INPUT_END, Activity.TOOL_INPUT_OPEN, Activity.TOOL_CALL),"
    source = declaration.read_text()
    assert source.count(edge) == 1
    declaration.write_text(source.replace(edge, edge.replace("TOOL_CALL)", "GENERATING)")))
    out = tmp_path / "out"
    done = build(project, out, pythonpath=project)
    assert done.returncode == 0, done.stderr
    before = (site / "machine" / "activity.svg").read_text()
    after = (out / "machine" / "activity.svg").read_text()
    assert after != before
    new_edge = "<title>tool_input_open&#45;&gt;generating</title>"
    assert new_edge not in before and new_edge in after
    assert (site / "machine" / "commitment.svg").read_text() == (
        out / "machine" / "commitment.svg"
    ).read_text()
    page = (out / "machine" / "tool_input_open" / "index.html").read_text()
    assert re.search(r"to <a href=\"../generating/\"><code>generating</code></a>: <code>tool_input_end", page)


# -- in the browser -----------------------------------------------------------------------------------------

needs_chromium = pytest.mark.skipif(
    chromium() is None,
    reason="headless Chromium is not installed (Debian: apt-get install -y chromium)",
)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    path = chromium()
    assert path is not None
    with Browser(path) as b:
        yield b


def problems(page: Page, since: int) -> list[str]:
    """Console errors, uncaught exceptions and failed loads this page reported since event ``since``."""
    found = []
    for event in page.browser.events[since:]:
        if event.get("sessionId") != page.session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            found.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            found.append(f"console.error: {[a.get('value') for a in params.get('args', [])]}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            found.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}")
        elif method == "Network.loadingFailed":
            found.append(f"failed load: {params.get('errorText')}")
    return found


@needs_chromium
def test_every_page_loads_offline_without_a_console_error(site: Path, served: str, browser: Browser) -> None:
    page = browser.page()
    page.call("Log.enable")
    paths = sorted(p.parent.relative_to(site).as_posix() for p in site.rglob("index.html"))
    assert len(paths) >= 15
    for path in paths:
        since = len(browser.events)
        url = served if path == "." else f"{served}{path}/"
        page.goto(url)
        assert page.js("document.querySelector('h1') !== null"), path
        assert problems(page, since) == [], path
    outside = [u for u in page.requested() if not u.startswith(served) and not u.startswith("data:")]
    assert outside == []


@needs_chromium
def test_the_diagrams_render_as_pictures(served: str, browser: Browser) -> None:
    page = browser.page()
    page.goto(f"{served}machine/")
    pictures = page.js(
        "[...document.querySelectorAll('img.diagram')].map(i => [i.getAttribute('src'), i.complete,"
        " i.naturalWidth, i.naturalHeight, i.getBoundingClientRect().width])"
    )
    assert [p[0] for p in pictures] == ["activity.svg", "commitment.svg"]
    for src, complete, width, height, shown in pictures:
        assert complete and width > 200 and height > 50 and shown > 200, src
    # An SVG that failed to parse has no natural size; one that parsed draws the states (text in the image).
    page.goto(f"{served}machine/activity.svg")
    names = page.js("[...document.querySelectorAll('g.node title')].map(t => t.textContent)")
    assert {"idle", "connecting", "generating", "tool_input_open", "failed"} <= set(names)


@needs_chromium
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("tool_input_interrupted", "taxonomy/#tool_input_interrupted"),
        ("RetryingRun", "reference/#streamfsm.RetryingRun"),
    ],
)
def test_search_finds_a_class_by_its_name(served: str, browser: Browser, query: str, expected: str) -> None:
    page = browser.page()
    page.goto(served)
    page.js("document.querySelector('.md-search__input').focus()")
    page.call("Input.insertText", {"text": query})
    links: list[str] = []
    for _ in range(100):
        links = page.js("[...document.querySelectorAll('.md-search-result__link')].map(a => a.href)")
        if links:
            break
        time.sleep(0.1)  # Material's search worker indexes after the page loaded
    # a result links to its page with ?h=<query> (to highlight it) and the section's anchor
    assert any(
        urllib.parse.urlsplit(link)._replace(query="").geturl() == served + expected for link in links
    ), links


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@needs_chromium
def test_the_machine_and_a_state_page_read_at_1280_px(served: str, browser: Browser) -> None:
    page = browser.page(width=1280)
    page.goto(f"{served}machine/")
    picture = page.js(
        "(() => { const i = document.querySelector('img.diagram');"
        " return [i.getBoundingClientRect().width, i.naturalWidth,"
        " i.closest('a')?.getAttribute('href')]; })()"
    )
    shown, natural, link = picture
    assert natural < 1400 and shown >= 0.7 * natural, picture  # drawn for the page, not shrunk to a third
    assert link == "activity.svg"  # and a click opens it at full size
    for path in ("machine/generating/", "machine/tool_input_open/", "machine/idle/"):
        page.goto(f"{served}{path}")
        tables = page.js(
            "[...document.querySelectorAll('article table')].map(t => [t.scrollWidth,"
            " t.closest('.md-typeset__scrollwrap, .md-typeset__table, article').clientWidth])"
        )
        assert tables and all(width <= room for width, room in tables), (path, tables)
        # every identifier in a table on one line: never broken mid-word
        broken = page.js(
            "[...document.querySelectorAll('article td code')].filter(c => c.getClientRects().length > 1)"
            ".map(c => c.textContent)"
        )
        assert broken == [], (path, broken)
        headers = page.js("[...document.querySelectorAll('article th')].map(h => h.textContent)")
        assert {"action", "title"} <= set(headers), headers
        right = page.js(
            "Math.max(...[...document.querySelectorAll('article th')]"
            ".map(h => h.getBoundingClientRect().right))"
        )
        assert right <= 1280, (path, right)


@needs_chromium
@pytest.mark.parametrize("path", sorted(SCREENSHOTS))
def test_the_docs_screenshots_are_taken_here(served: str, browser: Browser, path: str) -> None:
    page = browser.page(width=1280)
    page.goto(f"{served}{path}")
    shot = page.screenshot()
    assert png_size(shot)[0] == 1280
    if os.environ.get("STREAMFSM_WRITE_DOCS") == "1":
        SCREENSHOTS[path].write_bytes(shot)
    kept = SCREENSHOTS[path].read_bytes()
    assert png_size(kept)[0] == 1280, SCREENSHOTS[path]
    # Fresh: the page as it is now is as tall as the picture (a row more or less in a table moves it by
    # 20 px and more; a font's rounding elsewhere by less than 0.5%).
    height, kept_height = png_size(shot)[1], png_size(kept)[1]
    assert abs(height - kept_height) <= 0.005 * height, (
        f"{SCREENSHOTS[path].name} is stale ({kept_height} px tall, the page {height} px):"
        " retake it with STREAMFSM_WRITE_DOCS=1"
    )
    shown = re.findall(r"\]\((docs/site-\w+\.png)\)", (ROOT / "README.md").read_text())
    assert f"docs/{SCREENSHOTS[path].name}" in shown
