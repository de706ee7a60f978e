"""The two databases the store runs on: SQLite from the standard library (WAL), and PostgreSQL through
psycopg 3 (the ``store-postgres`` extra). One schema and one set of queries; only what differs lives here."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, Protocol
from urllib.parse import urlsplit, urlunsplit

__all__ = ["COLUMNS", "Backend", "connect", "safe_label"]

COLUMNS: Final = (
    "run_id",
    "t",  # when the run started, microseconds since the epoch (NULL: the record does not say)
    "failed",  # 1 unless the run completed
    "failure_class",
    "summary_key",
    "provider",
    "model",
    "transport_kind",
    "route",
    "account",
    "request_id",
    "provider_request_id",
    "close",
    "title",
)
"""The columns of ``runs`` a record fills, in insert order (``seq``, the arrival order, is the database's).
A row as the store writes it is these, then the whole record (zlib-compressed JSON), which goes to a table
of its own (``records``) so that the scans of ``runs`` stay narrow."""

# Indexes for time, signature, route, account, model, provider, request id and run id. Each dimension ends in
# ``t`` so that a filter and a time window use one index; the signature also by arrival (the latest samples).
_INDEXES: Final = (
    ("runs_t", "t"),
    ("runs_signature_t", "summary_key, provider, model, transport_kind, t, failed"),
    ("runs_signature_seq", "summary_key, provider, model, transport_kind, seq"),
    ("runs_route", "route, t"),
    ("runs_account", "account, t"),
    ("runs_model", "model, t"),
    ("runs_provider", "provider, t"),
    ("runs_provider_model", "provider, model, t, failed"),  # a signature's failure rate
    ("runs_class", "failure_class, t"),
    ("runs_request_id", "request_id"),
    ("runs_provider_request_id", "provider_request_id"),
)
_TEXT_COLUMNS: Final = ", ".join(f"{name} TEXT NOT NULL" for name in COLUMNS[3:])


def _schema(seq: str, blob: str) -> list[str]:
    statements = [
        f"CREATE TABLE IF NOT EXISTS runs ({seq}, run_id TEXT NOT NULL UNIQUE, t BIGINT,"
        f" failed SMALLINT NOT NULL, {_TEXT_COLUMNS})",
        f"CREATE TABLE IF NOT EXISTS records (run_id TEXT PRIMARY KEY, record {blob} NOT NULL)",
    ]
    statements += [f"CREATE INDEX IF NOT EXISTS {name} ON runs ({cols})" for name, cols in _INDEXES]
    return statements


_INSERT: Final = f"INSERT INTO runs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
_UPSERT: Final = (
    f"{_INSERT} ON CONFLICT (run_id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in COLUMNS[1:])}"
)
_INSERT_RECORD: Final = "INSERT INTO records (run_id, record) VALUES (?, ?)"
_UPSERT_RECORD: Final = f"{_INSERT_RECORD} ON CONFLICT (run_id) DO UPDATE SET record = excluded.record"


def _split(rows: Iterable[Sequence[Any]]) -> tuple[list[Sequence[Any]], list[tuple[Any, Any]]]:
    runs, records = [], []
    for row in rows:
        runs.append(row[:-1])
        records.append((row[0], row[-1]))
    return runs, records


"""A run seen again (in the audit log and the error log, or from a later record of it) keeps its place in
arrival order and takes the later record's values."""


class Backend(Protocol):
    """What the store needs of a database. Statements use ``?`` placeholders."""

    kind: str
    label: str

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
    def upsert(self, rows: Iterable[Sequence[Any]]) -> None: ...
    def load(self, rows: Iterable[Sequence[Any]]) -> None: ...
    def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...
    def close(self) -> None: ...


def safe_label(url: str) -> str:
    """``url`` without its password, for messages and output."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


class _Sqlite:
    kind = "sqlite"

    def __init__(self, path: str, label: str) -> None:
        self.label = label
        # One connection, shared by the threads of this process under a lock (the sink's writer, queries).
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")  # readers never wait for the writer
            self._db.execute("PRAGMA synchronous=NORMAL")  # durable at checkpoints; the logs are the truth
            with self._transaction():
                for statement in _schema("seq INTEGER PRIMARY KEY", "BLOB"):
                    self._db.execute(statement)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, tuple(params)).fetchall()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run each ``;``-separated statement in one transaction; the last one's row count."""
        with self._lock, self._transaction():
            return [self._db.execute(one, tuple(params)).rowcount for one in sql.split(";")][-1]

    def upsert(self, rows: Iterable[Sequence[Any]]) -> None:
        runs, records = _split(rows)
        with self._lock, self._transaction():
            self._db.executemany(_UPSERT, runs)
            self._db.executemany(_UPSERT_RECORD, records)

    def load(self, rows: Iterable[Sequence[Any]]) -> None:
        runs, records = _split(rows)
        with self._lock, self._transaction():
            self._db.executemany(_INSERT, runs)
            self._db.executemany(_INSERT_RECORD, records)

    def close(self) -> None:
        with self._lock:
            self._db.close()


class _Postgres:
    kind = "postgresql"

    def __init__(self, url: str, label: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise RuntimeError(
                "a PostgreSQL store needs psycopg 3: pip install 'streamfsm[store-postgres]'"
            ) from None
        self.label = label
        self._db = psycopg.connect(url, autocommit=True)
        self._lock = threading.Lock()
        with self._lock, self._db.transaction():
            # Several relays may create the schema at once: one at a time.
            self._db.execute("SELECT pg_advisory_xact_lock(7461626)")
            for statement in _schema("seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "BYTEA"):
                self._db.execute(statement.encode())

    @staticmethod
    def _sql(sql: str) -> bytes:
        return sql.replace("?", "%s").encode()  # the store's statements hold no literal ? or %

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(self._sql(sql), tuple(params)).fetchall()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run each ``;``-separated statement in one transaction; the last one's row count."""
        with self._lock, self._db.transaction():
            return [self._db.execute(self._sql(one), tuple(params)).rowcount for one in sql.split(";")][-1]

    def upsert(self, rows: Iterable[Sequence[Any]]) -> None:
        runs, records = _split(rows)
        with self._lock, self._db.transaction(), self._db.cursor() as cursor:
            cursor.executemany(self._sql(_UPSERT), runs)
            cursor.executemany(self._sql(_UPSERT_RECORD), records)

    def load(self, rows: Iterable[Sequence[Any]]) -> None:
        runs, records = _split(rows)
        with self._lock, self._db.transaction(), self._db.cursor() as cursor:
            for table, columns, values in (
                ("runs", COLUMNS, runs),
                ("records", ("run_id", "record"), records),
            ):
                with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN".encode()) as copy:
                    for row in values:
                        copy.write_row(row)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def connect(url: str) -> Backend:
    """``sqlite:///relative.db``, ``sqlite:////absolute.db``, a plain file path (SQLite), or
    ``postgresql://user@host:port/db`` (also ``postgres://``)."""
    label = safe_label(url)
    scheme, sep, rest = url.partition("://")
    if not sep:
        return _Sqlite(url, url)
    if scheme == "sqlite":
        path = rest[1:] if rest.startswith("/") else rest
        if not path:
            raise ValueError("a SQLite store URL names a file: sqlite:///path/to/store.db")
        return _Sqlite(path, label)
    if scheme in ("postgresql", "postgres"):
        return _Postgres(url, label)
    raise ValueError(f"not a store URL: {label!r} (use sqlite:///PATH or postgresql://...)")
