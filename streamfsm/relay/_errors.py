"""What the errors page asks, as queries of a run store (``streamfsm.store``): groups with their failure
rates and trends over a window, filtered; runs of a group, paged; a run by run id or request id.

``PageQuery`` is the page's URL query (``?by=route&since=6h&model=gpt-4o``): parsed strictly (a value the
page cannot honour is an error, never silently ignored) and written back for every link, so that a view is
shareable as its URL. ``ErrorsData`` answers it from a store: the relay's ``--store`` (shared by its workers
and, on PostgreSQL, by relays on several hosts), or, without one, the relay's own SQLite store: with an audit
log a file beside it that a thread keeps current from the logs (``streamfsm.store.LogIndexer``), else a
private store of this process fed through a ``StoreSink``.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import tempfile
import threading
import urllib.parse
import weakref
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final, TypeVar

from ..classify import CLASS_MEANING, FailureClass
from ..runtime import SIGNATURE, RunRecord, iso
from ..store import (
    Earlier,
    Filters,
    LogIndexer,
    Store,
    StoreDamaged,
    StoreSink,
    StoreUnavailable,
    catch_up,
    safe_label,
)
from ._journal import JournalReader

__all__ = [
    "BY",
    "FILTERS",
    "SORTS",
    "STORE_SUFFIX",
    "ErrorsData",
    "PageQuery",
    "default_store",
    "page_report",
    "page_runs",
    "parse_window",
    "remove_store",
]

BY: Final[Mapping[str, tuple[str, ...]]] = {
    "signature": SIGNATURE,
    "class": ("class",),
    "route": ("route",),
    "account": ("account",),
    "provider": ("provider",),
    "model": ("model",),
}
"""The page's views: what failed runs are grouped by (as ``streamfsm report --by``)."""
FILTERS: Final = ("route", "account", "model", "provider", "class", "summary_key", "transport_kind", "close")
"""The URL's filter names (``class`` is the failure class), each a ``streamfsm.store.Filters`` field."""
NONE: Final = "(none)"
"""A filter value matching runs without the value (no route, no model)."""
WINDOWS: Final = ("1h", "6h", "24h", "7d", "30d")
DEFAULT_WINDOW: Final = "24h"
TREND_BUCKETS: Final = 24
RECENT: Final = timedelta(hours=1)
RECENT_BUCKETS: Final = 12
"""A window longer than ``RECENT`` has its last hour drawn apart too, in 5-minute buckets: in 24 bars of a day
the last hour is one bar."""
SORTS: Final = ("count", "rate", "change")
"""The groups' orders: the most failures, the highest failure rate, the largest rise of the failure rate since
the window before (``Store.earlier``)."""
PAGE_SIZE: Final = 50
GROUP_LIMIT: Final = 100
"""The most groups a page lists (the most failures first): a view by account may have thousands."""
_MAX_VALUE: Final = 200
_WINDOW_RE: Final = re.compile(r"(\d{1,5})([mhd])")
_UNITS: Final = {"m": 60, "h": 3600, "d": 86400}
STORE_SUFFIX: Final = ".runs.db"
"""The relay's own store is its audit log's name with this after it (``audit.jsonl.runs.db``)."""
_VIEW_WAIT_S: Final = 1.0  # a view waits this long at most for the runs that ended just before it
UNREACHABLE: Final = "the store is unreachable; showing the {log}"
DAMAGED: Final = "the store is damaged; showing the {log}"
_T = TypeVar("_T")
log: Final = logging.getLogger("streamfsm.relay")


def parse_window(text: str, now: datetime) -> datetime:
    """The start of the window ``text`` names: ``30m``, ``6h``, ``7d``, or an ISO time (UTC if no zone)."""
    match = _WINDOW_RE.fullmatch(text)
    if match is not None and int(match[1]) > 0:
        try:
            return now - timedelta(seconds=int(match[1]) * _UNITS[match[2]])
        except OverflowError:  # a window reaching before the year 1
            raise ValueError(f"since: {text} before the window's end is before the year 1") from None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"since: expected 30m, 6h, 7d or an ISO time, not {text[:40]!r}") from None
    when = _utc(when, "since", text)
    if when >= now:
        raise ValueError("since: the window must start in the past")
    return when


def _utc(when: datetime, name: str, text: str) -> datetime:
    """``when`` in UTC (UTC if it names no zone); a time whose UTC falls outside the years 1 to 9999 (a zone
    beside 0001-01-01 or 9999-12-31) is the caller's mistake, not the page's."""
    if when.tzinfo is None:
        return when.replace(tzinfo=timezone.utc)
    try:
        return when.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError(f"{name}: {text[:40]!r} is outside the years 1 to 9999 in UTC") from None


def _parse_until(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"until: expected an ISO time, not {text[:40]!r}") from None
    return _utc(when, "until", text)


@dataclass(frozen=True, slots=True)
class PageQuery:
    """One view of the errors page, as its URL query says it."""

    by: str = "signature"
    since: str = DEFAULT_WINDOW
    until: str = ""  # an ISO time; "" for now (a view with both ends shows the same whenever it is opened)
    filters: tuple[tuple[str, str], ...] = ()  # (name in FILTERS, value), in FILTERS' order
    before: int | None = None  # the runs list's page
    q: str = ""  # a search: run id or request id
    sort: str = "count"  # one of SORTS

    @classmethod
    def parse(cls, query_string: str | bytes) -> PageQuery:
        """The view ``query_string`` asks for; ValueError naming what the page cannot honour."""
        text = query_string.decode("latin-1") if isinstance(query_string, bytes) else query_string
        values: dict[str, str] = {}
        for name, value in urllib.parse.parse_qsl(text, keep_blank_values=True):
            if name in values and values[name] != value:
                raise ValueError(f"{name} is given twice")
            values[name] = value.strip()[: _MAX_VALUE + 1]
        by = values.pop("by", "") or "signature"
        if by not in BY:
            raise ValueError(f"by: one of {', '.join(BY)}, not {by[:40]!r}")
        since = values.pop("since", "") or DEFAULT_WINDOW
        until = values.pop("until", "")
        end = _parse_until(until) if until else datetime.now(timezone.utc)
        parse_window(since, end)  # raises for a bad one
        before_text = values.pop("before", "")
        if before_text and not (before_text.isascii() and before_text.isdigit() and len(before_text) <= 18):
            raise ValueError("before: a page position (a number of at most 18 digits)")
        q = values.pop("q", "")
        sort = values.pop("sort", "") or "count"
        if sort not in SORTS:
            raise ValueError(f"sort: one of {', '.join(SORTS)}, not {sort[:40]!r}")
        filters = []
        for name in FILTERS:
            value = values.pop(name, "")
            if len(value) > _MAX_VALUE:
                raise ValueError(f"{name}: longer than {_MAX_VALUE} characters")
            if value:
                filters.append((name, value))
        if values:
            raise ValueError(f"not a filter of this page: {', '.join(sorted(values))[:80]}")
        return cls(by, since, until, tuple(filters), int(before_text) if before_text else None, q, sort)

    def filter(self, name: str) -> str:
        return dict(self.filters).get(name, "")

    def with_filters(self, **values: str | None) -> PageQuery:
        """This view with more filters (a value of None drops that filter); back to the first page."""
        merged = dict(self.filters)
        for name, value in values.items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        ordered = tuple((name, merged[name]) for name in FILTERS if merged.get(name))
        return replace(self, filters=ordered, before=None, q="")

    def url(self, path: str, **changes: Any) -> str:
        """``path`` with this view's query (``changes``: fields replaced first)."""
        query = replace(self, **changes) if changes else self
        pairs: list[tuple[str, str]] = []
        if query.by != "signature":
            pairs.append(("by", query.by))
        if query.since != DEFAULT_WINDOW:
            pairs.append(("since", query.since))
        if query.until:
            pairs.append(("until", query.until))
        if query.sort != "count":
            pairs.append(("sort", query.sort))
        pairs.extend(query.filters)
        if query.before is not None:
            pairs.append(("before", str(query.before)))
        if query.q:
            pairs.append(("q", query.q))
        return path + ("?" + urllib.parse.urlencode(pairs) if pairs else "")

    def store_filters(self, now: datetime) -> Filters:
        """The store's filters of this view (``now``: the window's end unless the view names one)."""
        end = _parse_until(self.until) if self.until else now
        values = {("failure_class" if n == "class" else n): ("" if v == NONE else v) for n, v in self.filters}
        return Filters(since=parse_window(self.since, end), until=end, **values)


def group_filters(names: Sequence[str], key: Mapping[str, Any]) -> dict[str, str]:
    """The filters that select one group's runs (its key's values; NONE for a missing one)."""
    return {name: (NONE if key.get(name) is None else str(key[name])) for name in names}


class ErrorsData:
    """The errors page's queries, over the store at ``url``, or without one over the relay's own SQLite
    store. With an audit log among ``logs`` (``audit``: it holds every run) that store is a file beside it
    (``default_store``), kept current from the logs by a ``LogIndexer`` off the request path (so that no
    stream waits on it, and the first view after a million runs costs what any other does); it catches up
    from where it stopped after a restart or a crash, and ``keep=False`` removes it at ``close()``. Without
    an audit log it is a private store in a temporary folder, removed with this object, that indexes the
    error log's records at each view and every run of this process through ``sink``. ``sink``: the relay's
    sink that indexes each run into the store (None when the store follows the logs). ``journal``: the log
    holding the relay's begin lines, whose streams a relay's death cut the page lists too. When the store at
    ``url`` cannot be reached or is damaged, every view answers from ``logs`` (a private store following
    them) and its source says so; ``close()`` removes the private stores."""

    def __init__(
        self,
        url: str | None,
        logs: Sequence[str] = (),
        journal: str | None = None,
        *,
        audit: str | None = None,
        keep: bool = True,
    ) -> None:
        self.journal = journal
        self._journal = JournalReader(journal) if journal is not None else None
        self._logs = list(logs)
        self._audit = audit
        self._folder: str | None = None
        self._removals: list[weakref.finalize[Any, Any]] = []
        self._fallback: tuple[Store, _Skipped] | None = None
        self._lock = threading.Lock()
        self.sink: StoreSink | None = None
        self.indexer: LogIndexer | None = None
        self._damaged = False
        self._skipped = _Skipped()
        own = url is None
        follow = own and audit is not None and audit in logs
        if follow:
            assert audit is not None
            path = self._own_store(default_store(audit))
            url = str(path)
            if not keep and self._folder is None:
                self._removals.append(weakref.finalize(self, remove_store, path))
        elif url is None:
            self._folder = self._private_folder()
            url = str(Path(self._folder) / "runs.db")
        try:
            self.store: Store | None = Store.open(url)
        except StoreDamaged as exc:  # the page answers from the logs; a rebuild makes the store again
            log.warning("%s; the errors page shows the logs", exc)
            self.store, self._damaged = None, True
        self.source = "this relay's runs" if own else safe_label(url)
        self._catch_up = logs if self._folder is not None and not follow else ()  # the error log, at a view
        if self.store is not None:
            if follow:
                after = self._journal.advance if self._journal is not None else None
                self.indexer = LogIndexer(url, logs, after_pass=after)
            else:
                self.sink = StoreSink(url)

    def _own_store(self, path: Path) -> Path:
        """The store file beside the audit log, made ready to open: its folder made (the log's first line
        makes it too); a damaged one removed (an index of the logs, made again from them); one that cannot
        be made there replaced by a private one."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            Store.open(str(path)).close()
        except StoreDamaged as exc:
            log.warning("%s; indexing the logs into it afresh", exc)
            remove_store(path)
        except (OSError, StoreUnavailable) as exc:
            log.warning("cannot keep the store beside the audit log (%s); keeping a private one", exc)
            self._folder = self._private_folder()
            return Path(self._folder) / "runs.db"
        return path

    def _private_folder(self) -> str:
        folder = tempfile.mkdtemp(prefix="streamfsm-relay-store-")
        self._removals.append(weakref.finalize(self, shutil.rmtree, folder, ignore_errors=True))
        return folder

    def close(self) -> None:
        """Stop indexing; remove the private stores (this relay's own in a temporary folder or, not kept,
        beside the audit log; one that stood in for an unreachable store)."""
        if self.sink is not None:
            self.sink.close(1.0)
        if self.indexer is not None:
            self.indexer.close(5.0)
        for store in (self.store, self._fallback[0] if self._fallback else None):
            if store is not None:
                store.close()
        for remove in self._removals:
            remove()  # a finalizer runs once: not again at exit

    def _ready(self) -> None:
        """Before a query: the runs that ended just before this view indexed (a private store's error log
        read since the last view; the indexer's or the sink's backlog waited for, a moment at most)."""
        if self.store is None:
            raise StoreDamaged(self.source)
        if self._catch_up:
            with self._lock:
                _index(self.store, self._catch_up, self._skipped)
        if self.indexer is not None:
            self.indexer.flush(_VIEW_WAIT_S)
        if self.sink is not None and not self.sink.unreachable:
            self.sink.flush(_VIEW_WAIT_S)

    def _answer(self, ask: Callable[[Store, str], _T]) -> _T:
        """``ask`` of the store; of the logs (a private store following them) when the store is unreachable
        or damaged: the page says so instead of failing."""
        try:
            self._ready()
            assert self.store is not None
            return ask(self.store, self.source)
        except StoreUnavailable as exc:
            if self._folder is not None:
                raise  # this relay's own store: nothing else to show
            with self._lock:
                if self._fallback is None:
                    log.warning("%s; the errors page shows the logs", exc)
                    folder = self._private_folder()
                    self._fallback = Store.open(str(Path(folder) / "runs.db")), _Skipped()
                store, skipped = self._fallback
                _index(store, self._logs, skipped)
            shown = "audit log" if self._audit in self._logs else "error log" if self._logs else "logs (none)"
            damaged = self._damaged or isinstance(exc, StoreDamaged)
            return ask(store, (DAMAGED if damaged else UNREACHABLE).format(log=shown))

    def report(self, query: PageQuery, now: datetime | None = None) -> dict[str, Any]:
        report = self._answer(lambda store, source: page_report(store, query, source, now))
        cut = self._journal.interrupted() if self._journal is not None else []
        report["interrupted"] = [item.to_json() for item in cut]
        skipped = self._skipped.count + (self._fallback[1].count if self._fallback else 0)
        skipped += self.indexer.skipped if self.indexer is not None else 0
        if skipped:
            report["unreadable_lines"] = skipped  # of the logs the page read, skipped
        return report

    def runs(self, query: PageQuery, now: datetime | None = None) -> dict[str, Any]:
        return self._answer(lambda store, source: page_runs(store, query, source, now))

    def find(self, run_id: str) -> RunRecord | None:
        return self._answer(lambda store, _: store.record(run_id))

    def search(self, text: str) -> list[RunRecord]:
        """The runs ``text`` names: a run id, a request id, or the start of a run id (at most a few)."""
        text = text.strip()[:_MAX_VALUE]
        if not text:
            return []
        return self._answer(lambda store, _: _search(store, text))


def _search(store: Store, text: str) -> list[RunRecord]:
    found = store.record(text)
    if found is not None:
        return [found]
    by_request = store.by_request_id(text)
    if by_request or len(text) < 6:  # a shorter run id prefix would match too much
        return by_request
    return store.find_runs(text)


def _index(store: Store, logs: Sequence[str], skipped: _Skipped) -> None:
    """Index in ``store`` what ``logs`` gained since the last look; a damaged line is skipped, counted and
    reported."""
    before = skipped.count
    catch_up(store, logs, skipped)
    if skipped.count > before:
        log.warning("the errors page skipped %d unreadable log lines", skipped.count - before)


class _Skipped:
    """Lines of the logs that could not be read (torn, not JSON), counted for the page
    (``unreadable_lines``)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, problem: object) -> None:
        self.count += 1


def default_store(audit: str | os.PathLike[str]) -> Path:
    """The relay's own store without ``--store``: a SQLite file beside its audit log."""
    path = Path(audit)
    return path.with_name(path.name + STORE_SUFFIX)


def remove_store(path: Path) -> None:
    """Remove a SQLite store and its write-ahead files."""
    for name in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with suppress(FileNotFoundError):
            name.unlink()


def page_report(store: Store, query: PageQuery, source: str, now: datetime | None = None) -> dict[str, Any]:
    """The errors page as data: ``streamfsm report --json``'s shape (groups with ``runs`` and
    ``failure_rate``), with the window, the filters, each group's trend (and its last hour's, in a longer
    window), its failure rate in the window before (when the hourly counts hold it) and, by class, what the
    class means; in the order ``query.sort`` asks for."""
    filters = query.store_filters(now or datetime.now(timezone.utc))
    names = BY[query.by]
    since, until = filters.since, filters.until
    assert since is not None
    assert until is not None
    totals = store.totals(filters)
    counted = store.trend(since, until, TREND_BUCKETS, filters, names)
    trends = {t.key: t for t in counted}
    earlier = store.earlier(filters, names)
    groups = store.groups(filters, names, limit=GROUP_LIMIT, counted=counted, rank=_rank(query.sort, earlier))
    recent_since = until - RECENT
    recent = None
    if recent_since > since:  # the listed groups' last hour, their runs counted with or without failures
        keys = [group.key for group in groups]
        recent = {
            t.key: t for t in store.trend(recent_since, until, RECENT_BUCKETS, filters, names, also=keys)
        }
    listed = []
    for group in groups:
        item = group.to_json(request_ids=True)
        trend = trends.get(group.key)
        item["trend"] = {
            "failures": list(trend.failures) if trend else [0] * TREND_BUCKETS,
            "runs": list(trend.runs) if trend else [0] * TREND_BUCKETS,
        }
        if recent is not None:
            last = recent.get(group.key)
            item["recent"] = {
                "failures": list(last.failures) if last else [0] * RECENT_BUCKETS,
                "runs": list(last.runs) if last else [0] * RECENT_BUCKETS,
            }
        if earlier is not None:
            failures, runs = earlier.counts(group.key)
            rate = earlier.rate(group.key)
            item["earlier"] = {
                "count": failures,
                "runs": runs,
                "failure_rate": None if rate is None else round(rate, 6),
                "change": None if rate is None else round(group.failure_rate - rate, 6),
            }
        if query.by == "class":
            item["meaning"] = _meaning(group.key[0])
        listed.append(item)
    return {
        "source": source,
        "by": query.by,
        "sort": query.sort,
        "since": iso(since),
        "until": iso(until),
        "window": None if query.until else query.since,  # relative ("6h") only when it ends now
        "filters": dict(query.filters),
        "runs": totals.runs,
        "failures": totals.failures,
        "failure_rate": round(totals.failures / totals.runs, 6) if totals.runs else 0.0,
        "trend": {
            "start": iso(since),
            "bucket_s": round((until - since).total_seconds() / TREND_BUCKETS, 3),
            "buckets": TREND_BUCKETS,
        },
        "recent": None
        if recent is None
        else {
            "start": iso(recent_since),
            "bucket_s": RECENT.total_seconds() / RECENT_BUCKETS,
            "buckets": RECENT_BUCKETS,
        },
        "earlier": None if earlier is None else {"since": iso(earlier.since), "until": iso(earlier.until)},
        "groups": listed,
        "groups_total": len(counted),  # every group with a failure in the window, listed or not
        "limited": len(listed) < len(counted),
    }


def _rank(sort: str, earlier: Earlier | None) -> Callable[[tuple[str | None, ...], int, int], float] | None:
    """The store's rank of a group for ``sort`` (None: the most failures first). By change, a group with no
    run in the window before (or a view the hourly counts cannot count) ranks below every other."""
    if sort == "rate":
        return lambda key, failures, runs: failures / runs if runs else 0.0
    if sort != "change":
        return None

    def change(key: tuple[str | None, ...], failures: int, runs: int) -> float:
        rate = None if earlier is None else earlier.rate(key)
        if rate is None:
            return -math.inf
        return (failures / runs if runs else 0.0) - rate

    return change


def _meaning(klass: str | None) -> dict[str, str] | None:
    try:
        title, description = CLASS_MEANING[FailureClass(klass)]
    except ValueError:  # a class this version does not know (a newer writer's)
        return None
    return {"title": title, "description": description}


def page_runs(store: Store, query: PageQuery, source: str, now: datetime | None = None) -> dict[str, Any]:
    """The failed runs matching the view's filters, the latest first, one page."""
    filters = query.store_filters(now or datetime.now(timezone.utc))
    page = store.runs(filters, failed=True, limit=PAGE_SIZE, before=query.before)
    klass = query.filter("class")
    return {
        "source": source,
        "since": iso(filters.since),
        "filters": dict(query.filters),
        "total": store.matching(filters, failed=True),  # every failed run of the view, on any page
        "older": query.before is not None,  # a later page: the runs before an earlier page's
        "meaning": _meaning(klass) if klass else None,
        "runs": [
            {
                "run_id": row.run_id,
                "request_id": row.request_id,
                "started_at": iso(row.started_at),
                "summary_key": row.summary_key,
                "class": row.failure_class,
                "provider": row.provider,
                "model": row.model,
                "route": row.route,
                "account": row.account,
                "close": row.close,
                "title": row.title,
            }
            for row in page.runs
        ],
        "next_before": page.next_before,
    }
