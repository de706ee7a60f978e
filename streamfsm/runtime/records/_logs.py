"""Reading run records back: one record file, a JSON-lines log (with its rotated siblings), or any JSON
document that embeds records (a session export).

What the reader accepts, decided from the first non-blank line:

* it parses as JSON on its own: **JSON lines**; every line is read and walked for records;
* it does not: the whole input is parsed as **one JSON document** and walked; when that fails too, it is
  read as JSON lines after all, so a log whose first line is damaged still yields the rest.

Walking a JSON value yields every object whose ``"schema"`` is ``streamfsm.run/<n>``, in document order; other
objects are searched inside. Problems never stop the reader; each one is handed to ``on_problem`` (by default
``warnings.warn(..., LogReadWarning)``) and the reader keeps going:

* a last line with no newline that is not valid JSON: a write torn by a crash (``torn_last_line``);
* any other line that is not valid JSON or not UTF-8 (``corrupt_line``), or longer than the reader's bound
  (``line_too_long``);
* a record of a schema this version cannot read (``unknown_schema``), or one missing the fields every reader
  relies on (``invalid_record``).

This module imports neither ``httpx`` nor ``anyio``.
"""

from __future__ import annotations

import enum
import io
import json
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final, Protocol

from ._record import READABLE_SCHEMAS, RunRecord, _no_escapes

__all__ = [
    "LogProblem",
    "LogReadWarning",
    "ProblemKind",
    "log_files",
    "read_records",
]

MAX_LINE_BYTES: Final = 16 << 20  # a record is a few KB; a longer "line" is not one of ours
_SCHEMA_PREFIX: Final = "streamfsm.run/"
# Fields every reader (the CLI, the report) indexes without checking.
_REQUIRED: Final = (
    ("ids", "run_id"),
    ("outcome", "class"),
    ("outcome", "summary_key"),
    ("retry", "verdict"),
    ("summary", "title"),
)


class LogReadWarning(UserWarning):
    """A part of a run log could not be read and was skipped."""


class ProblemKind(enum.Enum):
    _value_: str

    TORN_LAST_LINE = "torn_last_line"
    CORRUPT_LINE = "corrupt_line"
    LINE_TOO_LONG = "line_too_long"
    UNKNOWN_SCHEMA = "unknown_schema"
    INVALID_RECORD = "invalid_record"


@dataclass(frozen=True, slots=True)
class LogProblem:
    """Something skipped while reading. ``line`` is 1-based, ``None`` for a whole-document input."""

    source: str
    line: int | None
    kind: ProblemKind
    message: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.message}"


OnProblem = Callable[[LogProblem], None]


def _warn(problem: LogProblem) -> None:
    warnings.warn(str(problem), LogReadWarning, stacklevel=2)


def log_files(path: str | Path) -> list[Path]:
    """``path``'s rotated siblings (``path.N`` … ``path.1``, oldest first) that exist, ``path.rotating``
    if a rotation is under way (or died mid-way), then ``path``."""
    path = Path(path)
    pattern = re.compile(re.escape(path.name) + r"\.([1-9][0-9]*)")
    rotated: list[tuple[int, Path]] = []
    if path.parent.is_dir():
        for sibling in path.parent.iterdir():
            m = pattern.fullmatch(sibling.name)
            if m is not None and sibling.is_file():
                rotated.append((int(m.group(1)), sibling))
    aside = path.with_name(path.name + ".rotating")
    rotating = [aside] if aside.is_file() else []
    return [p for _, p in sorted(rotated, key=lambda item: -item[0])] + rotating + [path]


def read_records(
    source: str | Path | IO[bytes] | IO[str],
    *,
    rotated: bool = False,
    on_problem: OnProblem | None = None,
) -> Iterator[RunRecord]:
    """Every readable run record in ``source`` (a path or an open file), in file order.

    ``rotated``: for a path, read its rotated siblings first (oldest to newest), then the path itself.
    ``on_problem``: called for each skipped part; default ``warnings.warn`` with ``LogReadWarning``.
    A path that cannot be opened raises ``OSError``. Reading while a writer rotates can miss or repeat the
    lines that moved meanwhile.
    """
    report = on_problem or _warn
    if isinstance(source, (str, Path)):
        main = Path(source)
        for path in log_files(main) if rotated else [main]:
            try:
                f = open(path, "rb")  # noqa: SIM115 (closed below; a vanished sibling is skipped)
            except FileNotFoundError:
                if path == main:
                    raise
                continue  # a writer rotated it away since the listing; its lines moved to path.N+1
            with f:
                yield from _read_stream(f, str(path), report)
    else:
        name = getattr(source, "name", None)
        label = name if isinstance(name, str) else "<stream>"
        yield from _read_stream(_as_binary(source), label, report)


class _Binary(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...
    def readline(self, size: int = -1, /) -> bytes: ...


def _as_binary(stream: IO[bytes] | IO[str]) -> _Binary:
    buffer = getattr(stream, "buffer", None)  # sys.stdin and other text wrappers
    if isinstance(buffer, io.BufferedIOBase):
        return buffer
    data = stream.read()
    return io.BytesIO(data.encode("utf-8") if isinstance(data, str) else data)


def _lines(f: _Binary) -> Iterator[tuple[bytes | None, bool]]:
    """(line without its newline, ended by a newline?) pairs; an over-long line comes back as ``None``."""
    while True:
        line = f.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES:
            while not line.endswith(b"\n"):  # drain the rest without holding it
                line = f.readline(MAX_LINE_BYTES)
                if not line:
                    break
            yield None, True
        elif line.endswith(b"\n"):
            yield line[:-1], True
        else:
            yield line, False


def _split(raw: bytes) -> Iterator[tuple[bytes | None, bool]]:
    parts = raw.split(b"\n")
    for i, part in enumerate(parts):
        if i == len(parts) - 1:
            if part:
                yield part, False
        elif len(part) > MAX_LINE_BYTES:
            yield None, True
        else:
            yield part, True


def _read_stream(f: _Binary, label: str, report: OnProblem) -> Iterator[RunRecord]:
    blank = 0
    first = f.readline()  # unbounded: a minified export can be one long line
    while first and not first.strip():
        blank += 1
        first = f.readline()
    if not first:
        return
    value = _parse(first)
    if value is not _INVALID:  # JSON lines
        yield from _records(value, label, blank + 1, report, clean=_no_escapes(first))
        yield from _read_lines(_lines(f), label, report, start=blank + 2)
        return
    raw = first + f.read()
    document = _parse(raw)
    if document is not _INVALID:  # one document: a pretty-printed record or a session export
        yield from _records(document, label, None, report)
        return
    # Neither: JSON lines whose first line is damaged; the rest may be fine.
    yield from _read_lines(_split(raw), label, report, start=blank + 1)


def _read_lines(
    lines: Iterable[tuple[bytes | None, bool]], label: str, report: OnProblem, *, start: int
) -> Iterator[RunRecord]:
    for number, (line, complete) in enumerate(lines, start):
        if line is None:
            message = f"line longer than {MAX_LINE_BYTES} bytes, skipped"
            report(LogProblem(label, number, ProblemKind.LINE_TOO_LONG, message))
            continue
        if not line.strip():
            continue
        value = _parse(line)
        if value is not _INVALID:
            yield from _records(value, label, number, report, clean=_no_escapes(line))
        elif complete:
            report(LogProblem(label, number, ProblemKind.CORRUPT_LINE, "line is not valid JSON, skipped"))
        else:
            message = (
                f"last line is incomplete ({len(line)} bytes, no newline: a write was cut short), skipped"
            )
            report(LogProblem(label, number, ProblemKind.TORN_LAST_LINE, message))


_INVALID: Final = object()


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return _INVALID


def _records(
    value: Any, label: str, line: int | None, report: OnProblem, *, clean: bool = False
) -> Iterator[RunRecord]:
    """``clean``: the text parsed holds no character a record must replace (``RunRecord``)."""
    # Iterative depth-first walk in document order: a deep export must not hit the recursion limit.
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
            continue
        if not isinstance(item, dict):
            continue
        schema = item.get("schema")
        if isinstance(schema, str) and schema.startswith(_SCHEMA_PREFIX):
            record = _record(item, schema, label, line, report, clean)
            if record is not None:
                yield record
            continue
        stack.extend(reversed(list(item.values())))


def _record(
    data: dict[str, Any], schema: str, label: str, line: int | None, report: OnProblem, clean: bool
) -> RunRecord | None:
    if schema not in READABLE_SCHEMAS:
        report(
            LogProblem(
                label,
                line,
                ProblemKind.UNKNOWN_SCHEMA,
                f"record of schema {schema[:40]!r} skipped; this version reads {sorted(READABLE_SCHEMAS)}",
            )
        )
        return None
    for outer, inner in _REQUIRED:
        part = data.get(outer)
        if not isinstance(part, Mapping) or not isinstance(part.get(inner), str):
            report(
                LogProblem(label, line, ProblemKind.INVALID_RECORD, f"record without {outer}.{inner} skipped")
            )
            return None
    # Parsed here and held by nothing else: the record adopts it, no copy (a read costs ~3x less).
    return RunRecord._adopt(data, clean=clean)
