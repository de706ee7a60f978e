"""``streamfsm relay``: serve the relay (``streamfsm.relay``) with uvicorn (the ``relay`` extra); and
``streamfsm report LOG --html OUT``: the relay's errors page as one self-contained file.

Several workers: ``--workers N`` starts N uvicorn worker processes, each building the relay from the
settings this command puts in the environment (``STREAMFSM_RELAY_*``; the admin token stays in the variable
``--admin-token-env`` names). The error and audit logs are safe for several processes; the errors page
queries a run store: with an audit log the workers share the file beside it (each follows the logs, taking
turns), without one give ``--store`` with more than one worker (else each has a private one). The
metrics of all workers are summed through prometheus_client's multiprocess mode.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

from ._common import STARTUP_FAILED, epilog, positive_int

_ENV: Final = "STREAMFSM_RELAY_SETTINGS"
_ACCOUNT_KEY_ENV: Final = "STREAMFSM_RELAY_ACCOUNT_KEY"
_SESSION_KEY_ENV: Final = "STREAMFSM_RELAY_SESSION_KEY"
_DEFAULT_LISTEN: Final = "127.0.0.1:8787"
SHUTDOWN_GRACE_S: Final = 25.0  # inside Kubernetes' default 30 s between SIGTERM and SIGKILL


class _Quiet(logging.Filter):
    """The relay ends a failed stream's response without its end on purpose (and logs why, with the request
    id): uvicorn's line about it would only repeat that, without the id."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing response."


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535 or not host:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, not {text!r}")
    return host.strip("[]"), int(port)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {text!r}")
    return value


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "upstream": args.upstream,
        "error_log": args.error_log,
        "audit_log": args.audit_log,
        "otel": args.otel,
        "admin_token_env": args.admin_token_env,
        "account_headers": args.account_header,
        "max_body_bytes": args.max_body_bytes,
        "write_timeout": args.write_timeout,
        "idle_timeout": args.idle_timeout,
        "max_concurrent": args.max_concurrent,
        "body_budget_bytes": args.body_budget_bytes,
        "max_answer_bytes": args.max_answer_bytes,
        "answer_budget_bytes": args.answer_budget_bytes,
        "header_timeout": args.header_timeout,
        "max_client_connections": args.max_client_connections,
        "store": args.store,
        "keep_store": args.keep_store,
        "body_timeout": args.body_timeout,
        "body_min_rate": args.body_min_rate,
        "body_rate_grace": args.body_rate_grace,
        "public_url": args.public_url,
        "account_key_env": args.account_key_env,
        "admin_session_key_env": args.admin_session_key_env,
        "forward_client_address": args.forward_client_address,
        "routes": args.routes,
    }


def _secret(settings: dict[str, Any], name: str, what: str) -> str | None:
    """The secret in the environment variable the setting ``name`` names (None: no variable named)."""
    variable = settings.get(name)
    if not variable:
        return None
    value = os.environ.get(variable) or None
    if value is None:
        raise ValueError(f"the variable {variable} is not set (it holds {what})")
    return value


def _guard_connections(settings: dict[str, Any]) -> str:
    """Set the header timeout and the connection limit, quiet the accept errors of this process; the
    protocol's import path, for uvicorn."""
    from ..relay import GuardedH11Protocol, QuietAcceptErrors

    GuardedH11Protocol.configure(
        header_timeout=settings.get("header_timeout"), max_connections=settings.get("max_client_connections")
    )
    logging.getLogger("asyncio").addFilter(QuietAcceptErrors())
    return "streamfsm.relay._server:GuardedH11Protocol"


def build_relay(settings: dict[str, Any]) -> Any:
    """The relay from the command's settings (raises ValueError for a bad one)."""
    from ..relay import IDLE_TIMEOUT_S, Relay, RelayConfig
    from ..runtime import StreamConfig

    token = _secret(settings, "admin_token_env", "the admin token")
    sinks: tuple[Any, ...] = ()
    if settings.get("otel"):
        from ..otel import OtelLogSink, OtelSink

        sinks = (OtelSink(), OtelLogSink())
    options: dict[str, Any] = {}
    if settings.get("account_headers"):
        options["account_headers"] = tuple(settings["account_headers"])
    if settings.get("max_body_bytes") is not None:
        options["max_body_bytes"] = settings["max_body_bytes"]
    if settings.get("write_timeout") is not None:
        options["write_timeout"] = settings["write_timeout"]
    for name in (
        "max_concurrent",
        "body_budget_bytes",
        "body_timeout",
        "body_min_rate",
        "body_rate_grace",
        "max_answer_bytes",
        "answer_budget_bytes",
    ):
        if settings.get(name) is not None:
            options[name] = settings[name]
    if settings.get("routes"):
        from ..relay import RouteTable

        options["routes"] = RouteTable.load(settings["routes"])
    options["account_key"] = _secret(settings, "account_key_env", "the account key")
    options["session_key"] = _secret(settings, "admin_session_key_env", "the admin session key")
    stream = StreamConfig(sinks=sinks, idle_timeout=settings.get("idle_timeout") or IDLE_TIMEOUT_S)
    return Relay(
        RelayConfig(
            upstream=settings["upstream"],
            stream=stream,
            error_log=settings.get("error_log"),
            audit_log=settings.get("audit_log"),
            store=settings.get("store"),
            keep_store=settings.get("keep_store", True),
            admin_token=token,
            public_url=settings.get("public_url"),
            forward_client_address=bool(settings.get("forward_client_address")),
            **options,
        )
    )


def app_from_env() -> Any:
    """The uvicorn factory of each worker process (``--workers``)."""
    from ..relay import settle_collector

    settings = json.loads(os.environ[_ENV])
    _guard_connections(settings)
    relay = build_relay(settings)
    settle_collector()  # this worker process serves the relay
    return relay


def _relay(args: argparse.Namespace) -> int:
    from ..relay import is_loopback

    try:
        import uvicorn
    except ImportError:
        print("streamfsm relay: needs uvicorn: pip install 'streamfsm[relay]'", file=sys.stderr)
        return 2
    host, port = args.listen
    settings = _settings(args)
    from ..store import StoreUnavailable

    try:
        relay = build_relay(settings)
    except (ValueError, TypeError) as exc:
        print(f"streamfsm relay: {exc}", file=sys.stderr)
        return 2
    except StoreUnavailable as exc:  # a store that cannot be opened: one line, no traceback
        print(f"streamfsm relay: {exc}", file=sys.stderr)
        return 1
    if not is_loopback(host) and relay.config.admin_token is None:
        print(
            f"streamfsm relay: listening on {host}, beyond loopback, without --admin-token-env:"
            " the admin pages are refused",
            file=sys.stderr,
        )
    logging.getLogger("uvicorn.error").addFilter(_Quiet())
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_level": "info",
        "server_header": False,  # the upstream's headers go through instead
        "date_header": False,
        # In-flight streams may end within this; then each is cut with the format's error event and recorded
        # as relay_shutdown.
        "timeout_graceful_shutdown": args.shutdown_grace,
        "http": _guard_connections(settings),
        # The client's address is the connection's: uvicorn would take it from any loopback client's
        # X-Forwarded-For (the relay drops those headers; see --forward-client-address).
        "proxy_headers": False,
    }
    print(
        f"streamfsm relay: {host}:{port} -> {relay.config.upstream}"
        f" (errors page: http://{host}:{port}/admin/errors)",
        file=sys.stderr,
    )
    try:
        if args.workers > 1:
            _share_keys(settings)
            # The workers share the store beside the audit log: the first to stop must not remove it from
            # under the others, so this process removes it once they all have stopped.
            removed = settings.get("audit_log") if not settings.get("keep_store", True) else None
            os.environ[_ENV] = json.dumps({**settings, "keep_store": True})
            shared = _metrics_across_workers()
            try:
                app = "streamfsm.cli._relay:app_from_env"
                uvicorn.run(app, factory=True, workers=args.workers, **options)
            finally:
                if shared is not None:
                    shutil.rmtree(shared, ignore_errors=True)
                if removed and not settings.get("store"):
                    from ..relay import default_store, remove_store

                    remove_store(default_store(removed))
        else:
            from ..relay import settle_collector

            settle_collector()  # this process serves the relay
            uvicorn.run(relay, **options)
    except SystemExit as exc:
        if exc.code != STARTUP_FAILED:
            raise
        print(f"streamfsm relay: could not serve on {host}:{port} (uvicorn said why above)", file=sys.stderr)
        return STARTUP_FAILED
    return 0


def _share_keys(settings: dict[str, Any]) -> None:
    """The workers' common keys where they would each make their own, through the environment they inherit:
    an account key for this run when none is configured nor kept in a file (so that every worker names an
    account alike), and a session key for the admin cookie when none is configured (a sign-in then holds on
    every worker, and ends when the relay does)."""
    import secrets

    from ..relay import key_file

    logs = (settings.get("audit_log"), settings.get("error_log"))
    if not settings.get("account_key_env") and key_file(*logs, store=settings.get("store")) is None:
        os.environ[_ACCOUNT_KEY_ENV] = secrets.token_urlsafe(32)
        settings["account_key_env"] = _ACCOUNT_KEY_ENV
    if not settings.get("admin_session_key_env"):
        os.environ[_SESSION_KEY_ENV] = secrets.token_urlsafe(32)
        settings["admin_session_key_env"] = _SESSION_KEY_ENV


def _metrics_across_workers() -> str | None:
    """Each worker counts its own metrics: prometheus_client's multiprocess mode (a folder the workers share,
    read before any metric exists) makes a scrape of any worker answer the sum over all of them. The folder
    made here (None: the operator named one) is removed when the workers are gone."""
    if any(os.environ.get(name) for name in ("PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir")):
        return None
    shared = tempfile.mkdtemp(prefix="streamfsm-relay-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = shared
    return shared


def report_html(records: Any, source: str, out: str, interrupted: Any = ()) -> int:
    """Write the errors page of ``records`` (and a section per sample run) to ``out``, with the streams a
    relay's death cut (``interrupted``, from ``relay._journal``); the exit status. The records are indexed
    in a temporary store first, so that the file shows what the relay's page shows: failure rates and
    trends, over the records' whole time."""
    from ..store import Filters, Store

    folder = tempfile.mkdtemp(prefix="streamfsm-report-")
    try:
        with Store.open(str(Path(folder) / "runs.db")) as store:
            batch: list[Any] = []
            for record in records:
                batch.append(record)
                if len(batch) >= 2000:
                    store.add(batch)
                    batch.clear()
            store.add(batch)
            return report_html_from_store(store, Filters(), source, out, interrupted)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def report_html_from_store(store: Any, filters: Any, source: str, out: str, interrupted: Any = ()) -> int:
    """``report_html`` from a store (``streamfsm report --store URL --html OUT``): the relay's errors page
    from ``filters.since`` (the earliest run when None) until now."""
    from datetime import datetime, timedelta, timezone

    from ..relay import PageQuery, page_report, report_document

    now = datetime.now(timezone.utc)
    since = filters.since if filters.since is not None else store.earliest()
    if since is None or since >= now:
        since = now - timedelta(hours=1)
    report = page_report(store, PageQuery(since=since.isoformat()), source, now)
    report["window"] = None  # the summary names the start, not the ISO text
    report["interrupted"] = [item.to_json() for item in interrupted]
    samples = [r for g in report["groups"] for i in g["sample_run_ids"] if (r := store.record(i)) is not None]
    Path(out).write_text(report_document(report, samples), encoding="utf-8")
    print(f"streamfsm report: wrote {out}", file=sys.stderr)
    return 0


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``relay`` to the ``streamfsm`` command line."""
    relay = commands.add_parser(
        "relay",
        help="serve a pass-through LLM proxy whose every stream is recorded (needs the relay extra)",
        description=(
            "Forward every request to UPSTREAM and stream the answer back; each streaming LLM response is"
            " a run, recorded with how it closed. Errors page: /admin/errors. Every other path goes"
            " upstream, /metrics too: the relay's own metrics are at /admin/metrics."
        ),
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    relay.add_argument(
        "--upstream", required=True, metavar="URL", help="where requests go, e.g. https://api.openai.com"
    )
    relay.add_argument(
        "--listen",
        type=_listen,
        default=_listen(_DEFAULT_LISTEN),
        metavar="HOST:PORT",
        help=f"where to listen (default {_DEFAULT_LISTEN}: loopback only)",
    )
    relay.add_argument(
        "--error-log", metavar="PATH", help="JSON-lines log of failed runs (the errors page reads it)"
    )
    relay.add_argument("--audit-log", metavar="PATH", help="JSON-lines log of every run")
    relay.add_argument(
        "--otel",
        action="store_true",
        help="also emit an OpenTelemetry span per run and a log record per failed run (otel extra)",
    )
    relay.add_argument(
        "--admin-token-env",
        metavar="VAR",
        help="the environment variable holding the admin pages' bearer token (needed beyond loopback)",
    )
    relay.add_argument(
        "--account-header",
        action="append",
        metavar="NAME",
        help="request header naming the account (repeatable; recorded as a keyed hash, never its value;"
        " default: authorization, x-api-key, api-key, x-goog-api-key)",
    )
    relay.add_argument(
        "--max-body-bytes", type=positive_int, metavar="N", help="largest request body (default 32 MiB)"
    )
    relay.add_argument(
        "--write-timeout", type=_seconds, metavar="S", help="longest wait for the client to take a write (30)"
    )
    relay.add_argument(
        "--idle-timeout",
        type=_seconds,
        metavar="S",
        help="longest upstream silence mid-stream (90: named before the clients' patience, 600 in the SDKs)",
    )
    relay.add_argument(
        "--shutdown-grace",
        type=_seconds,
        default=SHUTDOWN_GRACE_S,
        metavar="S",
        help=f"how long in-flight streams may go on at shutdown before they are cut ({SHUTDOWN_GRACE_S:g})",
    )
    relay.add_argument(
        "--max-concurrent",
        type=positive_int,
        metavar="N",
        help="requests relayed at once per worker; beyond: 503 with Retry-After (default 1000)",
    )
    relay.add_argument(
        "--body-budget-bytes",
        type=positive_int,
        metavar="N",
        help="request bodies held at once per worker, all requests together; beyond: 503 with Retry-After"
        " (default 256 MiB)",
    )
    relay.add_argument(
        "--max-answer-bytes",
        type=positive_int,
        metavar="N",
        help="the largest non-streaming answer passed on (each is held until whole); beyond: 502"
        " (default 64 MiB)",
    )
    relay.add_argument(
        "--answer-budget-bytes",
        type=positive_int,
        metavar="N",
        help="non-streaming answers held at once per worker (each is read whole for its record); beyond:"
        " 502 (default 256 MiB)",
    )
    relay.add_argument(
        "--header-timeout",
        type=_seconds,
        metavar="S",
        help="longest wait for a request's line and headers, from connecting or the previous response;"
        " then the connection is closed (10)",
    )
    relay.add_argument(
        "--max-client-connections",
        type=positive_int,
        metavar="N",
        help="client connections open at once per worker; a new one closes the oldest still without a"
        " whole request head (default: half the file descriptor limit less 128, at most 4096)",
    )
    relay.add_argument(
        "--body-timeout",
        type=_seconds,
        metavar="S",
        help="longest wait for a whole request body, from its head; then 408 (60)",
    )
    relay.add_argument(
        "--body-min-rate",
        type=positive_int,
        metavar="N",
        help="slowest request body, in bytes a second on average after its first --body-rate-grace"
        " seconds; slower: 408 (1024)",
    )
    relay.add_argument(
        "--body-rate-grace",
        type=_seconds,
        metavar="S",
        help="seconds a request body may take before --body-min-rate applies (5)",
    )
    relay.add_argument(
        "--public-url",
        metavar="URL",
        help="where clients reach the relay, e.g. https://relay.example.com behind a TLS proxy: https makes"
        " the admin cookie Secure; its host is accepted on the admin pages",
    )
    relay.add_argument(
        "--admin-session-key-env",
        metavar="VAR",
        help="the environment variable holding the admin cookie's key (default: a new key at each start,"
        " so a restart signs browsers out)",
    )
    relay.add_argument(
        "--account-key-env",
        metavar="VAR",
        help="the environment variable holding the account hash's key (default: made once and kept in"
        " streamfsm-relay.key beside the audit log, the error log or the SQLite store, mode 0600)",
    )
    relay.add_argument(
        "--forward-client-address",
        action="store_true",
        help="send the client's address upstream as X-Forwarded-For (the client's own Forwarded,"
        " X-Forwarded-* and X-Real-IP are never forwarded)",
    )
    relay.add_argument(
        "--routes",
        metavar="FILE",
        help="a route table (JSON): a model name, or '*', to its upstream routes in order, each with its own"
        " key (by variable or file); a request falls back to the next route before its first byte reaches"
        " the client (see the relay guide)",
    )
    relay.add_argument(
        "--workers", type=positive_int, default=1, metavar="N", help="worker processes (default 1)"
    )
    relay.add_argument(
        "--store",
        metavar="URL",
        help="index every run in this store, which the errors page reads: sqlite:///PATH or"
        " postgresql://... (default: a SQLite file beside the audit log, AUDIT_LOG.runs.db, kept current"
        " from the logs; without an audit log a private store per process; see streamfsm store)",
    )
    relay.add_argument(
        "--keep-store",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="without --store: keep the relay's own store beside the audit log when it stops, so that the"
        " next start catches up from where it stopped (default); --no-keep-store removes it",
    )
    relay.set_defaults(run=_relay)
