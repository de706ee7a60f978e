"""Streams in flight when a relay died (issue 25 item 11): a begin line when a relayed stream starts, so
that a relay killed (``kill -9``, out of memory, a crash) leaves a trace of every stream it was serving.

Written (one ``O_APPEND`` line each, ``JsonlSink.append_line``) to the relay's *journal log*: the audit log
if there is one, else the error log:

* ``{"schema": "streamfsm.begin/1", "begin_id", "request_id", "route", "account", "started_at",
  "instance": {"id", "host", "pid", "process_started", "boot_id"}}`` before the request goes upstream, for
  every request that is an LLM run (the tap's own test by path, ``format_of``);
* the run's record carries ``ids.context.relay_begin`` (the begin id) and ``ids.context.relay_instance``,
  so the begin pairs with it; in the error log, which holds only failed runs, a ``streamfsm.end/1`` line
  (``begin_id``, ``instance``) closes every begin once its exchange is over.

``read_records`` skips both schemas (they are not runs). ``interrupted(path)`` reads them back: the begins
without an end or a record whose instance is no longer alive (the same host and boot, and its pid gone or
started at another time) are streams the relay's death cut. Their ends are not known (how far the stream
got, whether the client saw anything), so they are not run records, never a class of the taxonomy: they are
listed apart, by request id. A begin of an instance on another host, or still alive, is not claimed.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from pathlib import Path
from typing import Any, Final

import httpx

from ..runtime import AuditLog, ErrorLog, JsonlSink, log_files
from ..tap import Rule, check_rules, format_of

__all__ = ["BEGIN_SCHEMA", "END_SCHEMA", "Instance", "Interrupted", "Journal", "JournalReader", "interrupted"]

BEGIN_SCHEMA: Final = "streamfsm.begin/1"
END_SCHEMA: Final = "streamfsm.end/1"
BEGIN_KEY: Final = "relay_begin"
INSTANCE_KEY: Final = "relay_instance"
_MAX_LINE: Final = 1 << 20  # a journal line is a few hundred bytes; a run record a few KB
_SHOWN: Final = 1000  # interrupted streams kept per read (the most recent)


@dataclass(frozen=True, slots=True)
class Instance:
    """One relay process: its host, pid, and when it started (``/proc``: clock ticks since the boot)."""

    host: str
    pid: int
    process_started: str | None
    boot_id: str | None

    @property
    def id(self) -> str:
        return f"{self.host}/{self.pid}/{self.process_started or '-'}/{(self.boot_id or '-')[:8]}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "host": self.host,
            "pid": self.pid,
            "process_started": self.process_started,
            "boot_id": self.boot_id,
        }

    @classmethod
    def from_json(cls, data: Any) -> Instance | None:
        if not isinstance(data, Mapping) or not isinstance(data.get("host"), str):
            return None
        pid = data.get("pid")
        if not isinstance(pid, int):
            return None
        started, boot = data.get("process_started"), data.get("boot_id")
        return cls(
            data["host"][:256],
            pid,
            started if isinstance(started, str) else None,
            boot if isinstance(boot, str) else None,
        )

    def alive(self) -> bool | None:
        """Whether this process still runs: None when it cannot be told (another host)."""
        if self.host != socket.gethostname():
            return None
        if self.boot_id is not None and _boot_id() is not None and self.boot_id != _boot_id():
            return False  # the machine rebooted since
        started = _process_started(self.pid)
        if self.process_started is not None and started is not None:
            return started == self.process_started
        # Without a start time to compare (or /proc hides other users' processes, hidepid), only whether
        # the pid exists: a reused pid then reads as alive, never a live relay as dead.
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def this_instance() -> Instance:
    """This process (not cached: a forked worker is another instance)."""
    pid = os.getpid()
    return Instance(socket.gethostname(), pid, _process_started(pid), _boot_id())


def _process_started(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name may hold spaces
    return fields[19] if len(fields) > 19 else None  # field 22, starttime


@cache
def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _iso(wall: float) -> str:
    return (
        datetime.fromtimestamp(wall, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def _line(data: Mapping[str, Any]) -> bytes:
    return json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"


class Journal:
    """The relay's begin and end lines, in the first audit log among ``sinks``, else the first error log
    (then with end lines: it holds no record of a completed run); none without either. ``rules``: the
    relay's, which decide (as in the tap) which requests are runs."""

    def __init__(self, sinks: Iterable[object], rules: Iterable[Rule]) -> None:
        kept: list[JsonlSink] = [s for s in sinks if isinstance(s, JsonlSink)]
        audit: list[JsonlSink] = [s for s in kept if isinstance(s, AuditLog)]
        self._log = next(iter(audit or [s for s in kept if isinstance(s, ErrorLog)]), None)
        self._ends = isinstance(self._log, ErrorLog)
        self._rules = check_rules(rules)
        self._instance: Instance | None = None
        self._instance_id = ""
        self._pid = -1
        self._tail = b""  # the begin line's end, the same for every line of this process: its instance
        # Begin ids: a random half per journal, a counter for the other (a uuid4 per stream read the
        # system's random source every time).
        self._id_prefix = secrets.token_hex(8)
        self._counter = itertools.count()

    def begin(self, ids: Mapping[str, str], request: httpx.Request) -> dict[str, str]:
        """Write the begin line of ``request`` if it is a run, with these correlation ids; the ids its record
        must carry (none without a journal, for a request that is no run, or when the write failed: a
        begin that was not written is not claimed)."""
        url = request.url
        if self._log is None or not format_of(self._rules, request.method, url.path, url.params):
            return {}
        instance = self._instance
        pid = os.getpid()
        if instance is None or self._pid != pid:
            instance = self._instance = this_instance()
            self._pid = pid
            self._id_prefix = secrets.token_hex(8)  # a forked worker: ids of its own
            self._instance_id = instance.id
            self._tail = b',"instance":' + _line(instance.to_json())[:-1] + b"}\n"
        begin_id = f"begin_{self._id_prefix}{next(self._counter):016x}"
        head = {
            "schema": BEGIN_SCHEMA,
            "begin_id": begin_id,
            "request_id": ids.get("request_id"),
            "route": ids.get("route"),
            "account": ids.get("account"),
            "started_at": _iso(time.time()),
        }
        try:
            self._log.append_line(_line(head)[:-2] + self._tail)  # the head without its "}\n"
        except OSError:
            return {}
        return {BEGIN_KEY: begin_id, INSTANCE_KEY: self._instance_id}

    def end(self, begun: Mapping[str, str]) -> None:
        if self._log is None or not self._ends or BEGIN_KEY not in begun:
            return
        line = {"schema": END_SCHEMA, "begin_id": begun[BEGIN_KEY], "instance": begun[INSTANCE_KEY]}
        with suppress(OSError):  # the run's own record, if it failed, still pairs the begin
            self._log.append_line(_line(line))


@dataclass(frozen=True, slots=True)
class Interrupted:
    """A stream in flight when its relay died: what its begin line says, nothing more."""

    begin_id: str
    request_id: str | None
    route: str | None
    account: str | None
    started_at: str | None
    instance: Instance

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "route": self.route,
            "account": self.account,
            "started_at": self.started_at,
            "relay": self.instance.to_json(),
            "what_happened": WHAT_HAPPENED,
        }


WHAT_HAPPENED: Final = (
    "The relay stopped (killed or crashed) while this stream was in flight; the client's connection was cut"
    " then. How far the stream had got is not known: the relay died before it could record the run."
)


def interrupted(path: str | Path, *, rotated: bool = True) -> list[Interrupted]:
    """The streams whose begin in the journal log at ``path`` has no end, no record, and a dead relay
    (oldest first; the last ``_SHOWN``). A missing file has none."""
    return unpaired(_lines(Path(path), rotated))


def unpaired(items: Iterable[Mapping[str, Any]]) -> list[Interrupted]:
    """``interrupted`` over parsed lines (begin, end and run records in log order)."""
    begins: dict[str, Interrupted] = {}
    _pair(begins, items)
    return _dead(begins)


def _pair(begins: dict[str, Interrupted], items: Iterable[Mapping[str, Any]]) -> None:
    """Add the begins among ``items`` to ``begins``; drop those an end or a record pairs."""
    for item in items:
        schema = item.get("schema")
        if schema == BEGIN_SCHEMA:
            found = _begin(item)
            if found is not None:
                begins[found.begin_id] = found
        elif schema == END_SCHEMA:
            begins.pop(str(item.get("begin_id")), None)
        else:
            context = (item.get("ids") or {}).get("context") or {}
            if isinstance(context, Mapping):
                begins.pop(str(context.get(BEGIN_KEY)), None)


def _dead(begins: Mapping[str, Interrupted]) -> list[Interrupted]:
    """The begins whose relay is known dead (the last ``_SHOWN``)."""
    alive: dict[str, bool | None] = {}
    out = []
    for begin in begins.values():
        key = begin.instance.id
        if key not in alive:
            alive[key] = begin.instance.alive()
        if alive[key] is False:
            out.append(begin)
    return out[-_SHOWN:]


def _begin(item: Mapping[str, Any]) -> Interrupted | None:
    instance = Instance.from_json(item.get("instance"))
    begin_id = item.get("begin_id")
    if instance is None or not isinstance(begin_id, str):
        return None

    def text(name: str) -> str | None:
        value = item.get(name)
        return value[:200] if isinstance(value, str) else None

    return Interrupted(
        begin_id, text("request_id"), text("route"), text("account"), text("started_at"), instance
    )


def _lines(path: Path, rotated: bool) -> Iterator[Mapping[str, Any]]:
    """The begin and end lines of the log (and its rotated files), parsed, and of each record that pairs a
    begin, its begin id alone (a relay's audit log is large: its records are not parsed)."""
    for file in log_files(path) if rotated else [path]:
        try:
            handle = file.open("rb")
        except OSError:
            continue
        with handle:
            yield from _items(handle)


def _items(lines: Iterable[bytes]) -> Iterator[Mapping[str, Any]]:
    for raw in lines:
        if len(raw) > _MAX_LINE:
            continue
        if _JOURNAL_LINE.search(raw) is None:
            paired = _PAIRED.search(raw)
            if paired is not None:
                yield {"ids": {"context": {BEGIN_KEY: paired.group(1).decode()}}}
            continue
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        if isinstance(item, dict):
            yield item


class JournalReader:
    """``interrupted`` of one journal log, read as it grows: each call reads only what the log (and its
    rotated files, each known by its inode) gained since the last, up to a whole line's end, and keeps the
    begins not yet paired. A relay's journal is its audit log, which holds every run: read whole at each
    view of the errors page, it would cost that view seconds after a million runs. ``advance()`` reads on
    (the relay's store indexer calls it after each pass, off the request path)."""

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        self._read: dict[tuple[int, int], int] = {}  # (device, inode) -> offset read up to
        self._begins: dict[str, Interrupted] = {}
        self._lock = threading.Lock()

    def advance(self) -> None:
        with self._lock:
            seen: dict[tuple[int, int], int] = {}
            for file in log_files(self._path):
                try:
                    handle = file.open("rb")
                except OSError:
                    continue
                with handle:
                    info = os.fstat(handle.fileno())
                    key = (info.st_dev, info.st_ino)
                    offset = self._read.get(key, 0)
                    if info.st_size < offset:  # not the file read before (an inode used again)
                        offset = 0
                    handle.seek(offset)
                    while True:
                        data = handle.read(_READ)
                        end = data.rfind(b"\n") + 1
                        if not end and len(data) == _READ:  # no line is that long: skipped
                            end = len(data)
                        if not end:
                            break
                        offset += end
                        _pair(self._begins, _items(data[:end].splitlines(keepends=True)))
                        handle.seek(offset)
                    seen[key] = offset
            self._read = seen

    def interrupted(self) -> list[Interrupted]:
        self.advance()
        with self._lock:
            return _dead(self._begins)


_READ: Final = 4 << 20


_JOURNAL_LINE: Final = re.compile(rb'^\{"schema":"streamfsm\.(?:begin|end)/1"')
_PAIRED: Final = re.compile(rb'"%s": ?"(begin_[0-9a-f]{32})"' % BEGIN_KEY.encode())
