"""The two databases the store runs on: SQLite from the standard library (WAL), and PostgreSQL through
psycopg 3 (the ``store-postgres`` extra). One schema and one set of queries; only what differs lives here."""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Final, Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "COLUMNS",
    "CONNECT_TIMEOUT_S",
    "COUNTS",
    "HOUR",
    "RECONNECT_MAX_S",
    "RECONNECT_MIN_S",
    "STATEMENT_TIMEOUT_S",
    "UPSERT",
    "UPSERT_RECORD",
    "Backend",
    "StoreDamaged",
    "StoreUnavailable",
    "Writer",
    "connect",
    "counts_upsert",
    "safe_label",
]

_T = TypeVar("_T")

CONNECT_TIMEOUT_S: Final = 5
"""PostgreSQL: the longest a connection attempt waits for the server."""
STATEMENT_TIMEOUT_S: Final = 10.0
"""PostgreSQL: the longest one statement may run (the server cancels it). A server that does not answer at
all (hung, or its host gone) is cut by the client ``_HUNG_GRACE_S`` later: no query waits longer."""
_HUNG_GRACE_S: Final = 5.0
RECONNECT_MIN_S: Final = 0.1
RECONNECT_MAX_S: Final = 5.0
"""After a connection is lost or refused, the next attempt waits ``RECONNECT_MIN_S``, doubling up to
``RECONNECT_MAX_S``; until then the store answers ``StoreUnavailable`` at once (a page never waits on a
database known to be down)."""

log: Final = logging.getLogger("streamfsm.store")


class StoreUnavailable(RuntimeError):
    """The store's database cannot be used now: unreachable, its connection lost, a statement timed out,
    or (``StoreDamaged``) its file is damaged. The message names the store (no password) and why."""


class StoreDamaged(StoreUnavailable):
    """A SQLite store whose file is not a database or is damaged (``streamfsm store rebuild`` into a new
    file makes it again from the logs)."""


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
# The time, route and account indexes carry every grouped column after ``t`` (``_COVERED``): what the counts
# tables do not answer (a window's partial hours; a route or an account with the signature) is then counted
# from the index alone; without them each run costs a table lookup (1M runs, 7 days of one route: 505 ms for
# the page, 90% lookups). Model, provider, class, route and account also have an index by arrival (``seq``),
# which the latest runs of a filter or a group walk from the end (``Filters.where(by_arrival)``).
_COVERED: Final = "failed, failure_class, summary_key, provider, model, transport_kind, route, account, close"
_INDEXES: Final = (
    ("runs_t_covering", f"t, {_COVERED}"),
    ("runs_signature_t", "summary_key, provider, model, transport_kind, t, failed"),
    ("runs_signature_seq", "summary_key, provider, model, transport_kind, seq"),
    ("runs_route_covering", f"route, t, {_COVERED}"),
    ("runs_account_covering", f"account, t, {_COVERED}"),
    ("runs_route_seq", "route, seq"),
    ("runs_account_seq", "account, seq"),
    ("runs_model_seq", "model, seq"),
    ("runs_provider_seq", "provider, seq"),
    ("runs_class_seq", "failure_class, seq"),
    ("runs_request_id", "request_id"),
    ("runs_provider_request_id", "provider_request_id"),
)
_REPLACED: Final = ("runs_t", "runs_route", "runs_account", "runs_model", "runs_provider", "runs_class")
"""Indexes of earlier versions that a covering one above replaces: dropped when a store is opened."""
_TEXT_COLUMNS: Final = ", ".join(f"{name} TEXT NOT NULL" for name in COLUMNS[3:])


HOURLY: Final = ("summary_key", "failure_class", "provider", "model", "transport_kind")
"""The columns of ``hourly``: runs counted per hour of their start (``hour``; -1: no start time) and per
these values (the signature and the class), so that the errors page over a long window reads a few rows per
hour instead of every run."""

COUNTS: Final = {"hourly": HOURLY, "hourly_route": ("route",), "hourly_account": ("account",)}
"""The tables of hourly counts and the columns each counts by (besides ``hour`` and ``failed``). Route and
account have tables of their own: with the signature's columns their rows would be as many as the runs."""


HOUR: Final = 3_600_000_000  # microseconds


def _hour_of(t: str) -> str:
    """SQL for the hour of start time ``t`` as Python's ``t // HOUR`` (-1 when NULL); integer division
    truncates toward zero on both databases."""
    return f"CASE WHEN {t} IS NULL THEN -1 WHEN {t} >= 0 THEN {t} / {HOUR} ELSE ({t} + 1) / {HOUR} - 1 END"


def _counts_key(columns: Sequence[str]) -> tuple[str, ...]:
    # ``failed`` follows from the class: in the key only where the class is not
    return ("hour", *columns) if "failure_class" in columns else ("hour", *columns, "failed")


def counts_upsert(table: str) -> str:
    """The statement that adds ``n`` to one row of counts table ``table``: (hour, columns..., failed, n)."""
    columns = COUNTS[table]
    return (
        f"INSERT INTO {table} (hour, {', '.join(columns)}, failed, n)"
        f" VALUES ({', '.join('?' * (len(columns) + 3))})"
        f" ON CONFLICT ({', '.join(_counts_key(columns))}) DO UPDATE SET n = {table}.n + excluded.n"
    )


def _schema(seq: str, blob: str) -> list[str]:
    statements = [
        f"CREATE TABLE IF NOT EXISTS runs ({seq}, run_id TEXT NOT NULL UNIQUE, t BIGINT,"
        f" failed SMALLINT NOT NULL, {_TEXT_COLUMNS})",
        f"CREATE TABLE IF NOT EXISTS records (run_id TEXT PRIMARY KEY, record {blob} NOT NULL)",
    ]
    for table, columns in COUNTS.items():
        text = "".join(f"{name} TEXT NOT NULL, " for name in columns)
        statements.append(
            f"CREATE TABLE IF NOT EXISTS {table} (hour BIGINT NOT NULL, {text}failed SMALLINT NOT NULL,"
            f" n BIGINT NOT NULL, PRIMARY KEY ({', '.join(_counts_key(columns))}))"
        )
    # How far a store has indexed each file of a log it follows (``_follow``), moved with the rows it read.
    statements.append(
        "CREATE TABLE IF NOT EXISTS log_positions (log TEXT NOT NULL, dev BIGINT NOT NULL,"
        " ino BIGINT NOT NULL, read_to BIGINT NOT NULL, PRIMARY KEY (log, dev, ino))"
    )
    statements += [f"CREATE INDEX IF NOT EXISTS {name} ON runs ({cols})" for name, cols in _INDEXES]
    statements += [f"DROP INDEX IF EXISTS {name}" for name in _REPLACED]
    return statements


def _create(db: Writer, seq: str, blob: str) -> None:
    """The schema, and counts tables that a store of an earlier version lacked, counted from its runs (a
    table of counts is empty only while ``runs`` is: both change in one transaction)."""
    for statement in _schema(seq, blob):
        db.execute(statement)
    if not db.fetch("SELECT 1 FROM runs LIMIT 1"):
        return
    for table, columns in COUNTS.items():
        if not db.fetch(f"SELECT 1 FROM {table} LIMIT 1"):
            names = ", ".join(columns)
            db.execute(
                f"INSERT INTO {table} (hour, {names}, failed, n) SELECT {_hour_of('t')} AS hour, {names},"
                f" failed, COUNT(*) FROM runs GROUP BY {_hour_of('t')}, {names}, failed"
            )


_INSERT: Final = f"INSERT INTO runs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
UPSERT: Final = (
    f"{_INSERT} ON CONFLICT (run_id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in COLUMNS[1:])}"
)
_INSERT_RECORD: Final = "INSERT INTO records (run_id, record) VALUES (?, ?)"
UPSERT_RECORD: Final = f"{_INSERT_RECORD} ON CONFLICT (run_id) DO UPDATE SET record = excluded.record"


"""A run seen again (in the audit log and the error log, or from a later record of it) keeps its place in
arrival order and takes the later record's values."""


class Writer(Protocol):
    """Statements inside one write transaction (``?`` placeholders)."""

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
    def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...
    def copy(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None: ...


class Backend(Protocol):
    """What the store needs of a database: reads, and work done in one write transaction at a time."""

    kind: str
    label: str

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
    def write(self, work: Callable[[Writer], _T]) -> _T: ...
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
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise StoreUnavailable(f"cannot open the store {label}: no folder {folder}")
        self._lock = threading.Lock()
        try:
            # One connection, shared by the threads of this process under a lock (the sink's writer, queries).
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")  # readers never wait for the writer
            self._db.execute("PRAGMA synchronous=NORMAL")  # durable at checkpoints; the logs are the truth
            self.write(lambda db: _create(db, "seq INTEGER PRIMARY KEY", "BLOB"))
        except StoreUnavailable:
            raise
        except sqlite3.Error as exc:
            reason = _sqlite_reason(exc)
            if type(exc) is sqlite3.DatabaseError:  # not a database, or a damaged one
                log.warning("the store %s is damaged (%s): rebuild it from the logs", label, reason)
                raise StoreDamaged(f"the store {label} is damaged: {reason}") from None
            raise StoreUnavailable(f"cannot open the store {label}: {reason}") from None

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock, self._damage():
            return self._db.execute(sql, tuple(params)).fetchall()

    def write(self, work: Callable[[Writer], _T]) -> _T:
        with self._lock, self._damage():
            self._db.execute("BEGIN IMMEDIATE")  # take the write lock now: no upgrade deadlock later
            try:
                result = work(self)
            except BaseException:
                with suppress(sqlite3.Error):  # a damaged file may refuse the rollback too
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return result

    @contextmanager
    def _damage(self) -> Iterator[None]:
        """A damaged file is ``StoreDamaged`` (reported once); a file locked past the busy timeout or
        unreadable is ``StoreUnavailable``; a row the database refuses stays what it is."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            reason = _sqlite_reason(exc)
            if isinstance(exc, sqlite3.OperationalError):
                raise StoreUnavailable(f"the store {self.label} cannot be used: {reason}") from None
            if type(exc) is not sqlite3.DatabaseError:  # IntegrityError, DataError...: the row's own
                raise
            if not self._warned:
                self._warned = True
                log.warning("the store %s is damaged (%s): rebuild it from the logs", self.label, reason)
            raise StoreDamaged(f"the store {self.label} is damaged: {reason}") from None

    _warned = False

    # -- Writer, inside write() ------------------------------------------------------------------------

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._db.execute(sql, tuple(params)).fetchall()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._db.execute(sql, tuple(params)).rowcount

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._db.executemany(sql, rows)

    def copy(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self._db.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows
        )

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
        self._psycopg = psycopg
        self._url = url
        self._conn: Any = None
        self._retry_at = 0.0
        self._delay = RECONNECT_MIN_S
        self._lock = threading.Lock()

        def schema(db: Writer) -> None:
            db.execute("SELECT pg_advisory_xact_lock(7461626)")  # several relays may create it at once
            _create(db, "seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "BYTEA")

        self.write(schema)

    @staticmethod
    def _sql(sql: str) -> bytes:
        return sql.replace("?", "%s").encode()  # the store's statements hold no literal ? or %

    def _connection(self) -> Any:
        """The connection, made again after a loss (not before the backoff since the last failure)."""
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        self._conn = None
        now = time.monotonic()
        if now < self._retry_at:
            raise StoreUnavailable(
                f"the store {self.label} is unreachable (next try in {self._retry_at - now:.1f} s)"
            )
        psycopg = self._psycopg
        try:
            # Never prepared: a generic plan for a time window (t >= $1) walks the time index, 10x slower.
            # The statement timeout rides in the startup packet: a SET after it would be one more round trip
            # with no deadline (connect_timeout covers the connection; the session's timer starts later).
            conn = psycopg.connect(
                self._url,
                autocommit=True,
                prepare_threshold=None,
                connect_timeout=CONNECT_TIMEOUT_S,
                options=f"-c statement_timeout={int(STATEMENT_TIMEOUT_S * 1000)}",
            )
        except psycopg.Error as exc:
            self._retry_at = time.monotonic() + self._delay
            self._delay = min(self._delay * 2, RECONNECT_MAX_S)
            raise StoreUnavailable(f"the store {self.label} is unreachable ({type(exc).__name__})") from None
        self._delay = RECONNECT_MIN_S
        self._conn = conn
        return conn

    @contextmanager
    def _session(self) -> Iterator[Any]:
        """The connection for one query or transaction, under the lock and a deadline: a lost connection,
        a statement timeout and a server that stopped answering are ``StoreUnavailable``."""
        psycopg = self._psycopg
        with self._lock:
            conn = self._connection()
            timer = threading.Timer(STATEMENT_TIMEOUT_S + _HUNG_GRACE_S, _cut, (conn,))
            timer.daemon = True
            timer.start()
            try:
                yield conn
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                if conn.closed or conn.broken:
                    with suppress(Exception):
                        conn.close()
                    self._conn = None
                    self._retry_at = time.monotonic() + self._delay
                    self._delay = min(self._delay * 2, RECONNECT_MAX_S)
                raise StoreUnavailable(
                    f"the store {self.label} did not answer ({type(exc).__name__})"
                ) from None
            finally:
                timer.cancel()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._session() as conn:
            rows: list[tuple[Any, ...]] = conn.execute(self._sql(sql), tuple(params)).fetchall()
            return rows

    def write(self, work: Callable[[Writer], _T]) -> _T:
        with self._session() as conn, conn.transaction():
            return work(self)

    # -- Writer, inside write() ------------------------------------------------------------------------

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._conn.execute(self._sql(sql), tuple(params)).fetchall()
        return rows

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        count: int = self._conn.execute(self._sql(sql), tuple(params)).rowcount
        return count

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._conn.cursor() as cursor:
            cursor.executemany(self._sql(sql), rows)

    def copy(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        with (
            self._conn.cursor() as cursor,
            cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN".encode()) as copy,
        ):
            for row in rows:
                copy.write_row(row)

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()


def _cut(conn: Any) -> None:
    """Shut the socket of a connection whose server stopped answering: the query waiting on it fails."""
    with suppress(Exception):  # the connection closed meanwhile: nothing to cut
        sock = socket.socket(fileno=os.dup(conn.fileno()))
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.close()


def _sqlite_reason(exc: sqlite3.Error) -> str:
    # sqlite3's messages name the problem, never a row's values
    return str(exc).split("\n")[0][:120] or type(exc).__name__


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
