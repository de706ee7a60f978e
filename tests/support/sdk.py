"""The SDK side of the ``wrap()`` and tap tests: the real ``openai`` and ``anthropic`` clients against a
``FaultServer`` (``max_retries=0``), the streaming call of each format, and the checks every failure meets."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anthropic
import openai
import pytest

from streamfsm.tap import default_library
from streamfsm.testing import BODIES, FaultServer, FaultServerThread

FMTS = ("openai-chat", "openai-responses", "anthropic")
fmts = pytest.mark.parametrize("fmt", FMTS)
# A model name no SDK version knows, so none warns that it is deprecated.
SDK_BODIES = {**BODIES, "anthropic": {**BODIES["anthropic"], "model": "claude-test-model"}}
SDK_TIMEOUT_S = 10.0
BOUND_S = 20.0  # every test's own wait is bounded well below the SDK's
HTTP = default_library()  # the HTTP library the tap instruments here

# -- the SDK side -------------------------------------------------------------------------------------------


def client_for(fmt: str, base_url: str, *, sync: bool = False) -> Any:
    if fmt == "anthropic":
        cls: Any = anthropic.Anthropic if sync else anthropic.AsyncAnthropic
        return cls(base_url=base_url, api_key="sk-ant-test-0000", max_retries=0, timeout=SDK_TIMEOUT_S)
    cls = openai.OpenAI if sync else openai.AsyncOpenAI
    return cls(base_url=base_url + "/v1", api_key="sk-test-0000", max_retries=0, timeout=SDK_TIMEOUT_S)


def sdk_client(fmt: str, base_url: str, http_client: Any, *, retries: int = 0, sync: bool = False) -> Any:
    """A client of the SDK on ``http_client`` (the tapped one, or the library's plain one)."""
    if fmt == "anthropic":
        cls: Any = anthropic.Anthropic if sync else anthropic.AsyncAnthropic
        return cls(base_url=base_url, api_key="sk-ant-test-0", max_retries=retries, http_client=http_client)
    cls = openai.OpenAI if sync else openai.AsyncOpenAI
    return cls(base_url=f"{base_url}/v1", api_key="sk-test-0", max_retries=retries, http_client=http_client)


def create(fmt: str, client: Any) -> Any:
    """The streaming call, un-awaited for an async client (a stream at once for a sync one)."""
    body = SDK_BODIES[fmt]
    if fmt == "anthropic":
        return client.messages.create(**body, stream=True)
    if fmt == "openai-chat":
        return client.chat.completions.create(**body, stream=True, stream_options={"include_usage": True})
    return client.responses.create(**body, stream=True)


@asynccontextmanager
async def serving(fmt: str, steps: tuple[Any, ...]) -> AsyncIterator[tuple[FaultServer, Any]]:
    async with FaultServer(steps) as server:
        client = client_for(fmt, server.base_url)
        try:
            yield server, client
        finally:
            await client.close()


@contextmanager
def sync_serving(fmt: str, steps: tuple[Any, ...]) -> Iterator[tuple[FaultServerThread, Any]]:
    with FaultServerThread(steps) as server:
        client = client_for(fmt, server.base_url, sync=True)
        try:
            yield server, client
        finally:
            client.close()
