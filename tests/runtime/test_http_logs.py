"""streamfsm.redact_http_logs(): what httpx / httpcore (and httpx2 / httpcore2) log is redacted.

Real requests on loopback to the fault server, credentials planted in the query string, the userinfo and
the response's headers; a handler on the root logger captures every record at DEBUG.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import streamfsm
from streamfsm.classify._http_logs import _FILTER, HTTP_LOGGERS
from streamfsm.testing import End, FaultServer, Headers, Send

pytestmark = pytest.mark.anyio

QUERY_KEY = "AIzaSyQUERYSECRET0123456789abcdefghijk"
PASSWORD = "userinfo-pw-SECRET-42"
COOKIE = "session=COOKIESECRET0123456789"
ECHOED = "sk-proj-HEADERSECRET0123456789abcdef"
SECRETS = (QUERY_KEY, PASSWORD, "COOKIESECRET", "HEADERSECRET")
RESPONSE = (
    Headers(
        headers=(
            ("content-type", "text/event-stream"),
            ("x-request-id", "req_logs_1"),
            ("set-cookie", COOKIE),
            ("x-echoed-key", ECHOED),
        )
    ),
    Send(b"data: [DONE]\n\n"),
    End(),
)


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {self.format(record)}")


@pytest.fixture
def capture() -> Iterator[Capture]:
    """Every HTTP library logger at DEBUG into one handler; our filter removed before, put back after."""
    handler = Capture()
    root = logging.getLogger()
    loggers = [logging.getLogger(name) for name in HTTP_LOGGERS]
    saved = [(logger, logger.level, _FILTER in logger.filters) for logger in loggers]
    for logger in loggers:
        logger.removeFilter(_FILTER)
        logger.setLevel(logging.DEBUG)
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        for logger, level, had in saved:
            logger.setLevel(level)
            if had:
                logger.addFilter(_FILTER)
            else:
                logger.removeFilter(_FILTER)


async def request(library: Any, base_url: str) -> None:
    url = (
        base_url.replace("http://", f"http://agent:{PASSWORD}@") + f"/v1beta/models/x:stream?key={QUERY_KEY}"
    )
    async with library.AsyncClient() as client:
        async with client.stream("POST", url, json={"contents": []}) as response:
            async for _ in response.aiter_bytes():
                pass


LIBRARIES = ["httpx", "httpx2"]


def library(name: str) -> Any:
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed here (httpx2 needs Python 3.11)")
    return httpx if name == "httpx" else importlib.import_module(name)


@pytest.mark.parametrize("name", LIBRARIES)
async def test_without_it_the_libraries_log_the_planted_credentials(capture: Capture, name: str) -> None:
    async with FaultServer(RESPONSE) as server:
        await request(library(name), server.base_url)
    text = "\n".join(capture.lines)
    # The leak the function exists for, seen for real: if this stops, the test below proves nothing.
    assert QUERY_KEY in text and PASSWORD in text
    assert "COOKIESECRET" in text and "HEADERSECRET" in text


@pytest.mark.parametrize("name", LIBRARIES)
async def test_redact_http_logs_masks_urls_and_headers(capture: Capture, name: str) -> None:
    covered = streamfsm.redact_http_logs()
    assert streamfsm.redact_http_logs() == covered  # idempotent: one filter per logger
    for logger_name in covered:
        assert logging.getLogger(logger_name).filters.count(_FILTER) == 1
    async with FaultServer(RESPONSE) as server:
        await request(library(name), server.base_url)
        port = server.port
    text = "\n".join(capture.lines)
    for secret in SECRETS:
        assert secret not in text, secret
    assert "agent" not in text  # the userinfo goes whole
    # What a person needs stays: the request line without its query, the status, the allowed headers.
    assert f"POST http://127.0.0.1:{port}/v1beta/models/x:stream" in text
    assert "200 OK" in text
    assert "req_logs_1" in text
    assert "(b'set-cookie', b'[REDACTED]')" in text and "(b'x-echoed-key', b'[REDACTED]')" in text
    core = name.replace("x", "core", 1)  # httpx: httpcore, httpx2: httpcore2
    assert any(line.startswith(f"{core}.http11: receive_response_headers") for line in capture.lines)


async def test_the_relay_uses_the_same_filter(capture: Capture) -> None:
    from streamfsm.relay import Relay, RelayConfig

    assert all(_FILTER not in logging.getLogger(n).filters for n in HTTP_LOGGERS)
    Relay(RelayConfig(upstream="http://127.0.0.1:9"))
    assert all(logging.getLogger(n).filters.count(_FILTER) == 1 for n in HTTP_LOGGERS)


def test_an_exception_on_a_record_keeps_its_class_only(capture: Capture) -> None:
    streamfsm.redact_http_logs()
    try:
        raise httpx.ConnectError(f"cannot reach http://u:{PASSWORD}@example.com/?key={QUERY_KEY}")
    except httpx.ConnectError:
        logging.getLogger("httpcore.connection").debug("connect_tcp.failed", exc_info=True)
    (line,) = [line for line in capture.lines if "connect_tcp.failed" in line]
    assert PASSWORD not in line and QUERY_KEY not in line
    assert line.endswith("connect_tcp.failed (ConnectError)")
