"""The store's tests run against both databases: SQLite in a temporary folder, and a throwaway PostgreSQL
server on loopback (tests/support/pgserver.py). Without one, the PostgreSQL half skips with the reason,
except in CI (CI=true), where it fails."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.pgserver import Unavailable, postgres_server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    try:
        with postgres_server() as url:
            yield url
    except Unavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is needed in CI: {exc}")
        pytest.skip(f"no PostgreSQL server: {exc}")


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of an empty store, on each database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    url: str = request.getfixturevalue("postgres_url")
    import psycopg

    from streamfsm.store._backends import COUNTS

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"DROP TABLE IF EXISTS runs, records, {', '.join(COUNTS)}".encode())
    return url
