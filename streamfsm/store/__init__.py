"""The run store: an index of run records beside the JSON-lines logs, for the errors page, ``streamfsm
report`` and ``streamfsm diagnose`` at any size.

The logs stay the durable source of truth; the store is an index that can always be rebuilt from them
(``streamfsm store rebuild --from errors.jsonl audit.jsonl --store sqlite:///runs.db``). It holds one row per
run (a run in both the audit and the error log is one row) with the columns every query filters on, the
whole record (compressed) for ``diagnose``, and counts per hour: per signature and class, per route, per
account (exact: a run written again moves its counts), which the groups, rates, trends and totals over a
window read for its whole hours. Two databases, one schema and the same queries:

* **SQLite** (standard library, WAL): ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or a
  plain path. Any number of processes on one host (``streamfsm relay --workers N``).
* **PostgreSQL** through psycopg 3 (``pip install 'streamfsm[store-postgres]'``):
  ``postgresql://user@host:5432/db``. Several relays on several hosts write one store.

Feeding it: ``StoreSink(url)`` in ``StreamConfig.sinks`` (or ``streamfsm relay --store URL``) indexes each
record as it is written, from a thread of its own (the event loop only queues it), keeping what waits
through an outage of the database (it reconnects with backoff) and writing a refused batch row by row; or
``Store.add_logs`` / ``streamfsm store rebuild`` from the logs; or ``LogIndexer(url, logs)``, a thread that
keeps the store current from the logs themselves (what they gained, with how far each file was read, in one
transaction per batch: after a crash it catches up from there; the relay's default, a file beside its
audit log). A database that cannot be used now (down, a
statement past its timeout, a damaged SQLite file) is ``StoreUnavailable`` (``StoreDamaged``).
Retention: ``Store.prune(before)``, ``StoreSink(retention=)``, ``streamfsm store prune --older-than 30d``.

The query API (what the errors page, ``/metrics`` and exporters build on); every query takes ``Filters``
(a time window ``[since, until)`` on the run's start, and equal values of route, account, model,
provider, failure class, summary key, transport kind and relay close kind):

* ``Store.open(url)`` -> ``Store`` (a context manager; ``label`` is the URL without its password);
* ``store.groups(filters, by=SIGNATURE, limit=None, counted=None)`` -> ``[StoreGroup]``: failed runs
  grouped by the names of ``DIMENSIONS`` (the signature: summary key, provider, model, transport kind; or
  ``class``, ``route``, ``account``, ...), most failures first, with ``runs`` (every run in the window
  sharing the group's values other than ``OUTCOME_NAMES``: by signature, the runs of its provider and
  model) and ``failure_rate``, first and last seen, the latest sample run ids and their request ids, and the
  latest failure's title; ``to_json()`` is ``streamfsm report --json``'s group (plus ``runs`` and
  ``failure_rate``); ``counted``: the ``trend`` of the same filters and ``by``, whose sums then stand for
  two counting queries;
* ``store.trend(since, until, buckets, filters, by)`` -> ``[Trend]``: per key, failed and all runs per
  equal time bucket;
* ``store.runs(filters, failed=None, limit=50, before=None)`` -> ``RunsPage`` of ``RunRow`` (the latest
  first; ``next_before`` pages on);
* ``store.totals(filters)`` -> ``Totals`` (runs, failures, runs per class);
* ``store.record(run_id)``, ``store.find_runs(prefix)``, ``store.by_request_id(request_id)``,
  ``store.by_provider_request_id(id)`` -> whole ``RunRecord`` s;
* ``store.add(records)``, ``store.add_logs(paths, since=)``, ``store.rebuild(paths)``,
  ``store.prune(before)``, ``store.count()``.

Cost: grouping or filtering only by the signature's names and the class, or only by route, or only by
account, reads the hourly counts (and the runs of a window's partial hours, and of hours that two trend
buckets share); any other mix (by signature of one route, by account of one model, by close kind) reads
the runs in the window through their indexes, which over all of a large store is a scan. A store of an
earlier version gets its route and account counts, counted from its runs, when first opened. A run
indexed by two writers at the same moment (a sink and ``store add`` of the same log) can be counted twice
until ``store rebuild``.

Two ids, one name each, everywhere (records, command line, pages): the **request id** is the relay's id of
the client's request (``ids.context.request_id``; the client's own ``x-request-id`` when it sent a plain
one, and always returned as ``x-streamfsm-request-id``); the **provider request id** is the provider's id
of its response (``ids.provider_request_id``, from the provider's ``x-request-id`` / ``request-id``).
"""

from __future__ import annotations

from ._follow import INTERVAL_S, LogIndexer, catch_up
from ._sink import StoreSink
from ._store import *  # noqa: F403 (the store's names are listed once there)
from ._store import __all__ as _store_names

__all__ = [*_store_names, "INTERVAL_S", "LogIndexer", "StoreSink", "catch_up"]
