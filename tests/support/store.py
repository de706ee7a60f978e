"""Run records of many shapes for the store's tests: the log tests' scenarios with varied start times,
providers, models, routes, accounts and request ids."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from typing import Any

from streamfsm.runtime import RunRecord
from streamfsm.store import Store
from tests.support.logs import SCENARIOS

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)
ROUTES = ("/v1/chat/completions", "/v1/messages", "/v1/responses")
ACCOUNTS = ("acct-a", "acct-b", "acct-c")
MODELS = ("gpt-4o", "gpt-4o-mini", None)


def varied(count: int, seed: int = 0, *, span: timedelta = timedelta(hours=6)) -> list[RunRecord]:
    """``count`` records, run ids ``run-<i>``, in log order (start times mostly rising, some out of order)."""
    rng = random.Random(seed)
    templates = [scenario().to_dict() for scenario in SCENARIOS]
    out = []
    for i in range(count):
        data = rng.choice(templates)
        data = {**data, "ids": {**data["ids"], "context": dict(data["ids"]["context"])}}
        when = T0 + span * (i / count) - timedelta(seconds=rng.choice((0, 0, 0, 90)))
        data["started_at"] = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        data["ids"]["run_id"] = f"run-{i:05d}"
        data["provider"] = rng.choice(("openai-chat", "anthropic"))
        data["model"] = rng.choice(MODELS)
        context = data["ids"]["context"]
        context["route"] = rng.choice(ROUTES)
        if rng.random() < 0.8:
            context["account"] = rng.choice(ACCOUNTS)
        context["request_id"] = f"req-{i:05d}"
        out.append(RunRecord(data))
    return out


def write_worker(url: str, worker: int, count: int) -> None:
    """A child process: index ``count`` records with run ids ``w<worker>-<i>`` through a ``StoreSink``."""
    from streamfsm.store import StoreSink
    from tests.support.logs import with_ids

    sink = StoreSink(url)
    templates = [scenario() for scenario in SCENARIOS]
    for i in range(count):
        sink(with_ids(templates[i % len(templates)], f"w{worker}-{i:05d}"))
    sink.close(timeout=120)


VIEWS = ("route", "account", "signature", "class")


def page_views(
    store: Store, since: datetime, until: datetime, filters: tuple[tuple[str, str], ...] = ()
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The errors page's data (``page_report``) per view of ``VIEWS`` over ``[since, until)``: as ``store``
    answers it (from its tables of counts where it can), and as its runs alone say."""
    from streamfsm.relay import PageQuery
    from streamfsm.relay._errors import page_report

    scan = Store(store._db, counts=False)  # the same database, never reading the counts
    out: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
    for by in VIEWS:
        view = PageQuery(by=by, since=since.isoformat(), until=until.isoformat(), filters=filters)
        for answers, reader in zip(out, (store, scan), strict=True):
            answers[by] = page_report(reader, view, "test")
    return out
