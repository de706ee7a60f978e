"""``/admin/metrics``: scraped from the relay on the real uvicorn server in front of the fault server, and
parsed with prometheus_client's own parser; the counts are the streams sent. Behind the admin rule.
``--workers`` answers the sum over its worker processes (multiprocess mode)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamfsm import RunRecord, StreamConfig
from streamfsm.runtime import TextDelta
from streamfsm.testing import End, FaultServerThread, Fin, Headers, Send, Sleep, text_stream, unused_port
from tests.support.relay import relay_to, wait_lines
from tests.support.runs import BODIES, cut_through

parser = pytest.importorskip("prometheus_client.parser", reason="the metrics extra (prometheus_client)")

TOKEN = "admin-token-for-the-metrics-0123"
AUTH = {"authorization": f"Bearer {TOKEN}"}
FRAMES = text_stream("openai-chat", ["a", "b", "c"])
CUT = tuple(Send(f) for f in cut_through("openai-chat", FRAMES, TextDelta))


def route(request: Any) -> Any:
    if request.path.endswith("/fin/chat/completions"):
        return (Headers(), *CUT, Fin())
    if request.path.endswith("/slow/chat/completions"):
        return (Headers(), Send(FRAMES[0]), Sleep(1.5), *(Send(f) for f in FRAMES[1:]), End())
    return (Headers(), *(Send(f) for f in FRAMES), End())


def post(base_url: str, kind: str) -> None:
    body = {**BODIES["openai-chat"], "stream": True}
    with contextlib.suppress(httpx.HTTPError):  # a cut stream raises
        httpx.post(f"{base_url}/v1/{kind}/chat/completions", json=body, timeout=20)


def scrape(base_url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Each sample by name, then by its sorted labels."""
    answer = httpx.get(base_url + "/admin/metrics", headers=AUTH, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in parser.text_string_to_metric_families(answer.text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def streams(samples: dict[str, Any]) -> dict[tuple[str, str], float]:
    return {
        (dict(labels)["close_kind"], dict(labels)["summary_key"]): value
        for labels, value in samples.get("streamfsm_relay_streams_total", {}).items()
    }


class Broken:
    """A sink that always fails: its records are counted as dropped."""

    def __call__(self, record: RunRecord) -> None:
        raise OSError("disk full")


def test_the_scrape_counts_the_streams_sent(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    stream = StreamConfig(sinks=(Broken(),))
    with (
        FaultServerThread(route) as upstream,
        relay_to(upstream.base_url, audit_log=str(audit), admin_token=TOKEN, stream=stream) as relay,
    ):
        before = scrape(relay.base_url)
        assert streams(before) == {}
        assert before["streamfsm_relay_in_flight"][()] == 0
        for kind in ("ok", "ok", "ok", "fin", "fin"):
            post(relay.base_url, kind)
        records = wait_lines(audit, 5)
        # one stream held open upstream: in flight while it lasts
        slow = threading.Thread(target=post, args=(relay.base_url, "slow"))
        slow.start()
        deadline = time.monotonic() + 10
        while scrape(relay.base_url)["streamfsm_relay_in_flight"][()] != 1:
            assert time.monotonic() < deadline, "the slow stream never showed as in flight"
            time.sleep(0.05)
        slow.join(20)
        assert not slow.is_alive()
        wait_lines(audit, 6)
        after = scrape(relay.base_url)
    by_key: dict[tuple[str, str], float] = {}
    for record in records:
        key = (record["relay"]["close"], record["outcome"]["summary_key"])
        by_key[key] = by_key.get(key, 0) + 1
    by_key[("completed", "completed.finished")] += 1  # the slow one
    assert streams(after) == by_key
    assert by_key[("completed", "completed.finished")] == 4
    assert sum(v for (close, _), v in by_key.items() if close == "upstream_premature_close") == 2
    assert after["streamfsm_relay_in_flight"][()] == 0
    model = (("model", "gpt-4o-mini"),)
    assert set(after["streamfsm_relay_streams_total"]) == {
        tuple(sorted((("close_kind", c), ("summary_key", k), *model))) for c, k in by_key
    }
    assert after["streamfsm_relay_stream_duration_seconds_count"][model] == 6
    assert after["streamfsm_relay_time_to_first_token_seconds_count"][model] == 6
    # the slow stream waited 1.5 s between its tokens
    assert after["streamfsm_relay_stream_duration_seconds_bucket"][(("le", "0.64"), *model)] <= 5
    assert after["streamfsm_run_records_total"][()] == 6
    assert after["streamfsm_run_records_dropped_total"][(("sink", "Broken"),)] == 6


def test_metrics_are_behind_the_admin_rule(tmp_path: Path) -> None:
    with FaultServerThread(route) as upstream, relay_to(upstream.base_url, admin_token=TOKEN) as relay:
        url = relay.base_url + "/admin/metrics"
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, headers={"authorization": "Bearer wrong-token-wrong-token"}).status_code == 401
        assert httpx.get(url, headers=AUTH).status_code == 200


def test_workers_answer_the_sum_over_all_of_them(tmp_path: Path) -> None:
    """Two worker processes: whichever answers a scrape, it counts every stream (the command turns on
    multiprocess mode; without it this fails: a scrape counted 4 of 8); and with one SQLite store, whichever
    answers the errors page shows every worker's runs (without --store: pages of 2 runs and of 6)."""
    pytest.importorskip("uvicorn")
    port = unused_port()
    audit = tmp_path / "audit.jsonl"
    env = {**os.environ, "RELAY_TOKEN": TOKEN}
    with FaultServerThread(route) as upstream:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "streamfsm", "relay", "--upstream", upstream.base_url),
                *("--listen", f"127.0.0.1:{port}", "--audit-log", str(audit), "--workers", "2"),
                *("--store", f"sqlite:///{tmp_path / 'runs.db'}"),
                *("--admin-token-env", "RELAY_TOKEN"),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    httpx.get(base + "/admin/metrics", headers=AUTH, timeout=5)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the relay did not start"
                    time.sleep(0.1)
            for _ in range(6):  # every worker's page opened before the streams: nothing to start from
                httpx.get(base + "/admin/errors", headers={**AUTH, "accept": "application/json"})
            for kind in ("ok",) * 6 + ("fin",) * 2:
                post(base, kind)
            wait_lines(audit, 8)
            for _ in range(6):  # new connections: the kernel spreads them over the workers
                seen = streams(scrape(base))
                assert sum(seen.values()) == 8, seen
                assert seen[("completed", "completed.finished")] == 6
            deadline = time.monotonic() + 10
            while True:  # each worker's store writer indexes its runs a moment after they end
                pages = [
                    httpx.get(base + "/admin/errors", headers={**AUTH, "accept": "application/json"}).json()
                    for _ in range(6)
                ]
                if all((p["runs"], p["failures"]) == (8, 2) for p in pages):
                    break
                assert time.monotonic() < deadline, [(p["runs"], p["failures"]) for p in pages]
                time.sleep(0.1)
        finally:
            process.terminate()
            _, err = process.communicate(timeout=30)
    assert TOKEN.encode() not in err


def test_streams_are_labelled_by_at_most_20_models() -> None:
    """Per-model alerts: each run-fed metric has the record's model, sanitized; past 20 names, ``other``
    (a client naming models at will cannot grow the series); ``none`` for a record without one."""
    from streamfsm.relay._metrics import RelayMetrics

    metrics = RelayMetrics()
    models = [f"gpt-{i}" for i in range(22)] + ['x"}\nstreamfsm_fake 1', None]
    for model in models:
        metrics.record(
            {
                "model": model,
                "relay": {"close": "completed"},
                "outcome": {"summary_key": "completed.finished"},
                "timings": {"to_first_progress_s": 0.1, "total_s": 0.2},
            }
        )
    samples: dict[str, dict[str, float]] = {}
    for family in parser.text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            if "model" in sample.labels and "le" not in sample.labels:
                samples.setdefault(sample.name, {})[sample.labels["model"]] = sample.value
    expected = {**{f"gpt-{i}": 1.0 for i in range(20)}, "other": 3.0, "none": 1.0}
    assert samples["streamfsm_relay_streams_total"] == expected
    assert samples["streamfsm_relay_stream_duration_seconds_count"] == expected
    assert samples["streamfsm_relay_time_to_first_token_seconds_count"] == expected
