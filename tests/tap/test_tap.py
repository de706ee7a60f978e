"""Transparent mode: the real ``openai`` and ``anthropic`` SDKs, handed a tapped client, against loopback
faults.

Each scenario runs twice, once with the SDK's plain client of the same HTTP library and once with the tap:
what the SDK hands its caller (objects, exception types, requests sent) must be the same, and the tap's
records must say what happened. Runs in whichever SDK generation the environment has (httpx2 for openai 3.x
/ anthropic 2.x, httpx for the older ones).
"""

from __future__ import annotations

import gc
import gzip
import sys
import threading
import time
from typing import Any

import anyio
import openai
import pytest

import streamfsm
from streamfsm import StreamConfig
from streamfsm.runtime import TextDelta, ToolInputDelta
from streamfsm.tap import Rule, default_library, library
from streamfsm.testing import (
    End,
    FaultServer,
    FaultServerThread,
    Fin,
    Headers,
    Keepalive,
    Rst,
    Send,
    Sleep,
    Status,
    error_event,
    text_stream,
    tool_call_stream,
    unused_port,
)
from tests.support.runs import BODIES, cut_through, script, validate_record
from tests.support.sdk import BOUND_S, HTTP, SDK_BODIES, create, fmts, sdk_client

HTTP_LIB = library(HTTP)[0]
NOTES = sys.version_info >= (3, 11)
pytestmark = pytest.mark.anyio


def dump(item: Any) -> Any:
    return item.model_dump(mode="json")


class Seen:
    """What one SDK call handed its caller: items, then the exception type (or None)."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.error: BaseException | None = None

    @property
    def shape(self) -> tuple[list[Any], str | None]:
        return self.items, None if self.error is None else type(self.error).__qualname__


async def play(
    fmt: str,
    steps: tuple[Any, ...],
    *,
    tapped: bool,
    config: StreamConfig | None = None,
    retries: int = 0,
    stop_after: int | None = None,
    **tap_options: Any,
) -> tuple[Seen, int]:
    """One streaming call through the SDK's async client; (what it saw, requests the server got)."""
    seen = Seen()
    http_client = (
        streamfsm.async_http_client(http=HTTP, config=config, **tap_options)
        if tapped
        else HTTP_LIB.AsyncClient()
    )
    async with FaultServer(steps) as server:
        client = sdk_client(fmt, server.base_url, http_client, retries=retries)
        try:
            with anyio.fail_after(BOUND_S):
                stream = await create(fmt, client)
                async for item in stream:
                    seen.items.append(dump(item))
                    if stop_after is not None and len(seen.items) >= stop_after:
                        await stream.close()
                        break
        except Exception as exc:
            seen.error = exc
        finally:
            await client.close()
        return seen, server.requests_seen


async def both(fmt: str, steps: tuple[Any, ...], **options: Any) -> tuple[Seen, list[streamfsm.RunRecord]]:
    """The same call without and with the tap: the SDK's view must not change. Returns the tapped view and
    the tap's records (each checked against the schema)."""
    records: list[streamfsm.RunRecord] = []
    config = options.pop("config", StreamConfig())
    plain, plain_requests = await play(fmt, steps, tapped=False, **options)
    tapped, tapped_requests = await play(
        fmt, steps, tapped=True, config=config.replace(sinks=(records.append,)), **options
    )
    assert tapped.shape == plain.shape
    assert tapped_requests == plain_requests
    for record in records:
        validate_record(record)
    return tapped, records


async def wait_for(condition: Any, bound: float = 5.0) -> None:
    with anyio.fail_after(bound):
        while not condition():
            await anyio.sleep(0.01)


def outcome(record: streamfsm.RunRecord) -> tuple[str, str]:
    return record["outcome"]["summary_key"], record["retry"]["verdict"]


# -- what the agent sees does not change; the record says what happened ------------------------------------


@fmts
async def test_a_normal_stream_with_a_tool_call_is_unchanged_and_recorded(fmt: str) -> None:
    frames = tool_call_stream(fmt, [("read_file", '{"path": "a.txt"}')], text=["Hi"])  # type: ignore[arg-type]
    seen, records = await both(fmt, script(frames, End()))
    assert seen.error is None and seen.items
    (record,) = records
    assert outcome(record) == ("completed.finished", "no_retry")
    data = record.to_dict()
    assert data["provider"] == fmt
    assert data["model"] == SDK_BODIES[fmt]["model"]
    assert data["stream_events"]["tool_call"] == 1
    assert data["stream_events"]["text_delta"] == 1
    assert data["transport"]["bytes_received"] == sum(len(f) for f in frames)
    assert data["ids"]["attempt"] == 1


@fmts
async def test_the_tap_sees_what_open_stream_sees(fmt: str) -> None:
    frames = tool_call_stream(fmt, [("read_file", '{"path": "a.txt"}')], text=["Hi"], reasoning=["hm"])  # type: ignore[arg-type]
    async with FaultServer(script(frames, End())) as server:
        async with streamfsm.open_stream(fmt, base_url=server.base_url, json=BODIES[fmt]) as run:
            async for _ in run:
                pass
    _, (tapped,) = await both(fmt, script(frames, End()))
    direct, through = run.record.to_dict(), tapped.to_dict()  # type: ignore[union-attr]
    for section in ("stream_events", "delta_keys", "stored_parts", "tokens", "finish_reason"):
        assert through[section] == direct[section], section
    assert through["outcome"]["summary_key"] == direct["outcome"]["summary_key"]


@fmts
async def test_a_cut_mid_answer_raises_what_the_sdk_raises_with_the_diagnosis(fmt: str) -> None:
    frames = text_stream(fmt, ["Hello", " wor", "ld"])  # type: ignore[arg-type]
    seen, (record,) = await both(fmt, script(frames[:-3], Fin()))
    assert seen.error is not None
    failure = streamfsm.failure_of(seen.error)
    assert failure is not None
    assert failure.record is record
    assert outcome(record) == ("mid_generation.closed_mid_body", "user_confirmed_retry")
    if NOTES:
        chain = (seen.error, seen.error.__cause__)
        notes = [n for e in chain if e is not None for n in getattr(e, "__notes__", ())]
        assert any(n.startswith("streamfsm: The stream broke partway through the answer") for n in notes)


@fmts
async def test_a_reset_mid_answer_is_a_reset(fmt: str) -> None:
    frames = text_stream(fmt, ["Hello", " wor", "ld"])  # type: ignore[arg-type]
    seen, (record,) = await both(fmt, script(frames[:-3], Rst()))
    assert streamfsm.failure_of(seen.error) is not None
    assert outcome(record) == ("mid_generation.reset", "user_confirmed_retry")


@fmts
async def test_a_cut_while_a_tool_call_is_written_says_the_tool_did_not_run(fmt: str) -> None:
    frames = tool_call_stream(fmt, [("apply_patch", '{"patch": "--- a"}')])  # type: ignore[arg-type]
    seen, (record,) = await both(fmt, script(cut_through(fmt, frames, ToolInputDelta), Fin()))
    failure = streamfsm.failure_of(seen.error)
    assert failure is not None
    assert outcome(record) == ("tool_input_interrupted.closed_mid_body", "safe_auto_retry")
    assert "apply_patch" in failure.diagnosis.title
    assert "did not run" in failure.diagnosis.detail


@fmts
async def test_a_stall_kept_alive_by_keepalives_fails_the_read_as_a_timeout(fmt: str) -> None:
    frames = text_stream(fmt, ["Hello", " wor", "ld"])  # type: ignore[arg-type]
    records: list[streamfsm.RunRecord] = []
    config = StreamConfig(idle_timeout=0.3, sinks=(records.append,))
    steps = script(cut_through(fmt, frames, TextDelta), Keepalive(0.05, 200))  # 10 s of keepalives
    seen, _ = await play(fmt, steps, tapped=True, config=config)
    assert seen.error is not None
    assert "Timeout" in type(seen.error).__name__ or isinstance(seen.error, HTTP_LIB.ReadTimeout)
    (record,) = records
    assert record["outcome"]["summary_key"] == "watchdog.idle_timeout"
    assert record["watchdog"]["fired"] == "idle_timeout"
    assert streamfsm.failure_of(seen.error) is not None


@fmts
async def test_a_429_and_the_sdks_own_retry_are_one_attempt_chain(fmt: str) -> None:
    body = b'{"error": {"type": "rate_limit_error", "code": "rate_limit_exceeded", "message": "slow down"}}'
    steps = (Status(429, headers=(("retry-after", "0"), ("content-type", "application/json")), body=body),)
    seen, records = await both(fmt, steps, retries=1)
    assert seen.error is not None
    assert len(records) == 2  # one per request the SDK sent
    first, second = (r.to_dict() for r in records)
    assert first["ids"]["trace_id"] == second["ids"]["trace_id"]
    assert (first["ids"]["attempt"], second["ids"]["attempt"]) == (1, 2)
    assert second["ids"]["previous_run_id"] == first["ids"]["run_id"]
    assert second["attempts"][0]["decision"] == "sdk_retry"
    failure = streamfsm.failure_of(seen.error)
    assert failure is not None
    assert failure.record is records[-1]
    assert outcome(records[-1])[0] == "provider_error.rate_limit"
    assert records[-1]["retry"]["retry_after_s"] == 0


async def test_a_refused_connection_is_diagnosed_before_connection() -> None:
    records: list[streamfsm.RunRecord] = []
    http_client = streamfsm.async_http_client(http=HTTP, config=StreamConfig(sinks=(records.append,)))
    client = sdk_client("openai-chat", f"http://127.0.0.1:{unused_port()}", http_client)
    with anyio.fail_after(BOUND_S), pytest.raises(openai.APIConnectionError) as info:
        await create("openai-chat", client)
    await client.close()
    failure = streamfsm.failure_of(info.value)
    assert failure is not None
    assert outcome(records[0]) == ("before_connection.refused", "safe_auto_retry")


@fmts
async def test_in_band_errors_are_found_through_the_sdks_error(fmt: str) -> None:
    frames = text_stream(fmt, ["Hi"])  # type: ignore[arg-type]
    steps = script([frames[0], error_event(fmt, "overloaded")], End())  # type: ignore[arg-type]
    seen, (record,) = await both(fmt, steps)
    assert seen.error is not None
    failure = streamfsm.failure_of(seen.error)
    assert failure is not None
    assert record["outcome"]["edge"] == "provider_error_event"


# -- the end of a stream ---------------------------------------------------------------------------------


@fmts
async def test_a_clean_end_without_the_terminal_event_fails_the_sdks_read_by_default(fmt: str) -> None:
    """No SDK tells a stream that ended cleanly before its terminal event from a whole one (each just ends):
    the tap fails the read there, with the library's ``RemoteProtocolError``, carrying the failure."""
    frames = text_stream(fmt, ["Hello", " world"])  # type: ignore[arg-type]
    steps = script(frames[:3], End())  # text, but no finish and no terminal event
    plain, _ = await play(fmt, steps, tapped=False)
    assert plain.error is None  # what the SDK alone makes of it: a whole (truncated) answer
    records: list[streamfsm.RunRecord] = []
    seen, _ = await play(fmt, steps, tapped=True, config=StreamConfig(sinks=(records.append,)))
    assert seen.items == plain.items  # everything that came, then the error
    assert seen.error is not None
    assert isinstance(seen.error, HTTP_LIB.RemoteProtocolError) or isinstance(
        seen.error.__cause__, HTTP_LIB.RemoteProtocolError
    )
    failure = streamfsm.failure_of(seen.error)
    assert failure is not None and failure.record["outcome"]["edge"] == "eof_without_terminal"
    assert [r["outcome"]["edge"] for r in records] == ["eof_without_terminal"]


@fmts
async def test_strict_eof_false_leaves_that_end_to_the_sdk(fmt: str) -> None:
    frames = text_stream(fmt, ["Hello", " world"])  # type: ignore[arg-type]
    seen, (record,) = await both(fmt, script(frames[:3], End()), strict_eof=False)
    assert seen.error is None  # the SDK ends as it would have
    assert record["outcome"]["edge"] == "eof_without_terminal"


@fmts
async def test_a_consumer_that_stops_early_is_a_local_abort(fmt: str) -> None:
    frames = text_stream(fmt, ["Hello", " wor", "ld"])  # type: ignore[arg-type]
    seen, (record,) = await both(fmt, script(frames, End()), stop_after=2)
    assert seen.error is None
    assert record["outcome"]["edge"] == "local_abort"
    assert record["abort"]["source"] == "consumer_stopped"


# -- correlation, rules, what is left alone ---------------------------------------------------------------


async def test_context_tags_every_run_started_inside_it() -> None:
    frames = text_stream("anthropic", ["Hi"])
    records: list[streamfsm.RunRecord] = []
    config = StreamConfig(sinks=(records.append,))
    with streamfsm.context(session_id="ses_1", message_id="msg_1", tenant="acme"):
        with streamfsm.context(message_id="msg_2"):
            await play("anthropic", script(frames, End()), tapped=True, config=config)
        await play("anthropic", script(frames, End()), tapped=True, config=config)
    await play("anthropic", script(frames, End()), tapped=True, config=config)
    ids = [r["ids"] for r in records]
    assert [(i["session_id"], i.get("message_id")) for i in ids] == [
        ("ses_1", "msg_2"),
        ("ses_1", "msg_1"),
        (None, None),
    ]
    assert records[0]["ids"]["context"] == {"tenant": "acme"}
    with pytest.raises(TypeError), streamfsm.context(session_id=3):  # type: ignore[arg-type]
        pass


async def test_requests_that_are_not_llm_streams_pass_untouched() -> None:
    records: list[streamfsm.RunRecord] = []
    config = StreamConfig(sinks=(records.append,))
    body = b'{"object": "list", "data": []}'
    json_headers = (("content-type", "application/json"),)
    async with FaultServer((Status(200, headers=json_headers, body=body),)) as server:
        client = sdk_client(
            "openai-chat", server.base_url, streamfsm.async_http_client(http=HTTP, config=config)
        )
        page = await client.models.list()
        await client.close()
    assert page.data == []
    assert records == []


async def test_a_rule_taps_a_gateway_path() -> None:
    frames = text_stream("openai-chat", ["Hi"])
    records: list[streamfsm.RunRecord] = []
    config = StreamConfig(sinks=(records.append,))
    rules = (Rule(r"/llm/chat$", "openai-chat"),)
    async with FaultServer(script(frames, End())) as server:
        async with streamfsm.async_http_client(http=HTTP, config=config, rules=rules) as http:
            request = {**BODIES["openai-chat"], "stream": True}
            async with http.stream("POST", server.base_url + "/llm/chat", json=request) as response:
                chunks = [chunk async for chunk in response.aiter_raw()]
    assert b"".join(chunks) == b"".join(frames)
    (record,) = records
    assert record["outcome"]["summary_key"] == "completed.finished"


def test_bad_rules_and_options_are_refused_clearly() -> None:
    with pytest.raises(ValueError, match="provider must be one of"):
        Rule("/x", "openai")
    with pytest.raises(ValueError, match="not a regular expression"):
        Rule("(", "openai-chat")
    with pytest.raises(TypeError, match="Rule"):
        streamfsm.async_http_client(http=HTTP, rules=("/x",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="http must be one of"):
        streamfsm.async_http_client(http="requests")
    with pytest.raises(TypeError, match="to the transport you give"):
        streamfsm.async_http_client(http=HTTP, transport=HTTP_LIB.AsyncHTTPTransport(), http2=True)


def test_the_default_library_is_the_installed_sdk_generations() -> None:
    # openai 2.x lists httpx2 under an extra: what an extra would add is not what the SDK runs on.
    assert default_library() == ("httpx2" if int(openai.__version__.split(".")[0]) >= 3 else "httpx")


def test_the_client_is_the_sdk_generations_own() -> None:
    client = streamfsm.async_http_client()
    assert type(client).__module__.split(".")[0] == HTTP
    sync = streamfsm.http_client()
    assert type(sync).__module__.split(".")[0] == HTTP
    sync.close()


# -- sync clients -----------------------------------------------------------------------------------------


def play_sync(fmt: str, steps: tuple[Any, ...], http_client: Any) -> tuple[Seen, int]:
    seen = Seen()
    with FaultServerThread(steps) as server:
        client = sdk_client(fmt, server.base_url, http_client, sync=True)
        try:
            for item in create(fmt, client):
                seen.items.append(dump(item))
        except Exception as exc:
            seen.error = exc
        finally:
            client.close()
        return seen, server.requests_seen


@fmts
@pytest.mark.parametrize("ending", ["end", "fin"])
def test_sync_clients_are_tapped_the_same_way(fmt: str, ending: str) -> None:
    frames = text_stream(fmt, ["Hello", " wor", "ld"])  # type: ignore[arg-type]
    steps = script(frames, End()) if ending == "end" else script(frames[:-3], Fin())
    records: list[streamfsm.RunRecord] = []
    plain = play_sync(fmt, steps, HTTP_LIB.Client())
    config = StreamConfig(sinks=(records.append,))
    tapped = play_sync(fmt, steps, streamfsm.http_client(http=HTTP, config=config))
    assert (tapped[0].shape, tapped[1]) == (plain[0].shape, plain[1])
    (record,) = records
    expected = "completed.finished" if ending == "end" else "mid_generation.closed_mid_body"
    assert record["outcome"]["summary_key"] == expected
    if ending == "fin":
        assert streamfsm.failure_of(tapped[0].error) is not None


def test_a_sync_stall_is_ended_by_the_watchdog_thread() -> None:
    frames = text_stream("openai-chat", ["Hello", " wor", "ld"])
    records: list[streamfsm.RunRecord] = []
    config = StreamConfig(idle_timeout=0.3, sinks=(records.append,))
    steps = script(frames[:2], Keepalive(0.05, 200))
    seen, _ = play_sync("openai-chat", steps, streamfsm.http_client(http=HTTP, config=config))
    # openai 3.x wraps the read timeout in its own APITimeoutError; 2.x lets the library's escape mid-stream.
    assert isinstance(seen.error, (openai.APITimeoutError, HTTP_LIB.ReadTimeout))
    (record,) = records
    assert record["outcome"]["summary_key"] == "watchdog.idle_timeout"


async def test_a_response_dropped_unclosed_still_leaves_its_one_record() -> None:
    frames = text_stream("openai-chat", ["Hello", " world"])
    records: list[streamfsm.RunRecord] = []
    config = StreamConfig(sinks=(records.append,))
    async with FaultServer(script(frames, End())) as server:
        async with streamfsm.async_http_client(http=HTTP, config=config) as http:
            request = http.build_request(
                "POST",
                f"{server.base_url}/v1/chat/completions",
                json={**BODIES["openai-chat"], "stream": True},
            )
            response = await http.send(request, stream=True)
            assert records == []
            del response, request
            gc.collect()
            await wait_for(lambda: len(records) == 1)  # delivered off the collector, on a thread
            (record,) = records
    assert record["outcome"]["edge"] == "local_abort"
    assert record["abort"]["source"] == "consumer_stopped"


@pytest.mark.parametrize("corrupt", [False, True], ids=["gzip", "corrupt-gzip"])
async def test_an_encoded_body_is_decoded_for_the_run_as_the_sdk_decodes_it(corrupt: bool) -> None:
    frames = text_stream("openai-chat", ["Hello", " world"])
    packed = gzip.compress(b"".join(frames))
    if corrupt:
        packed = packed[:20] + bytes(b ^ 0xFF for b in packed[20:40]) + packed[40:]
    half = len(packed) // 2
    headers = (("content-type", "text/event-stream"), ("content-encoding", "gzip"))
    steps = (Headers(headers=headers), Send(packed[:half]), Send(packed[half:]), End())
    seen, (record,) = await both("openai-chat", steps)
    if corrupt:
        assert seen.error is not None
        assert record["outcome"]["state"].startswith("failed/")
    else:
        assert seen.error is None
        assert record["outcome"]["summary_key"] == "completed.finished"
        assert record["stream_events"]["text_delta"] == 2


async def test_the_same_request_resent_after_a_failure_joins_its_chain() -> None:
    """A framework's own retry (no retry count) of a request that failed is the next attempt of its chain; the
    same request after a success starts a chain of its own."""
    ok = script(text_stream("openai-chat", ["Hi"]), End())
    error = (Status(503, (("content-type", "application/json"),), b'{"error": {"type": "server_error"}}'),)
    scripts = (error, ok, ok)
    records: list[streamfsm.RunRecord] = []
    body = {**BODIES["openai-chat"], "stream": True}
    async with FaultServer(lambda request: scripts[min(request.seq, 2)]) as server:
        async with streamfsm.async_http_client(
            http=HTTP, config=StreamConfig(sinks=(records.append,))
        ) as http:
            for _ in scripts:
                async with http.stream(
                    "POST", f"{server.base_url}/v1/chat/completions", json=body
                ) as response:
                    await response.aread()
    first, resent, again = (r.to_dict() for r in records)
    assert (resent["ids"]["attempt"], resent["ids"]["trace_id"]) == (2, first["ids"]["trace_id"])
    assert [link["decision"] for link in resent["attempts"]] == ["resent"]
    assert (again["ids"]["attempt"], again["attempts"]) == (1, [])
    assert again["ids"]["trace_id"] != first["ids"]["trace_id"]


async def test_an_error_body_the_sdk_closes_unread_is_still_read_for_the_record() -> None:
    """The SDK retries a 429 without reading its body; the tap reads it as the SDK closes the response, so the
    first attempt says ``insufficient_quota`` (no retry), not a rate limit (safe)."""
    body = b'{"error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "quota"}}'
    steps = (Status(429, (("content-type", "application/json"),), body),)
    seen, records = await both("openai-chat", steps, retries=1)
    assert seen.error is not None
    assert [outcome(r) for r in records] == [("provider_error.quota_exhausted", "no_retry")] * 2


async def test_abort_between_reads_fails_the_next_read_as_a_local_abort() -> None:
    frames = text_stream("openai-chat", ["Hello", " wor", "ld"])
    records: list[streamfsm.RunRecord] = []
    config = StreamConfig(sinks=(records.append,))
    steps = tuple(item for frame in frames for item in (Send(frame), Sleep(0.02)))
    async with FaultServer((Headers(), *steps, End())) as server:
        async with streamfsm.async_http_client(http=HTTP, config=config) as http:
            body = {**BODIES["openai-chat"], "stream": True}
            url = f"{server.base_url}/v1/chat/completions"
            with anyio.fail_after(BOUND_S), pytest.raises(HTTP_LIB.ReadTimeout) as info:
                async with http.stream("POST", url, json=body) as response:
                    async for _ in response.aiter_raw():
                        streamfsm.tap.run_of(response).abort("the client went away", source="client")
    (record,) = records
    assert record["outcome"]["edge"] == "local_abort"
    assert (record["abort"]["source"], record["abort"]["reason"]) == ("client", "the client went away")
    assert streamfsm.failure_of(info.value).record is record  # type: ignore[union-attr]


def test_a_sync_abort_from_another_thread_interrupts_a_stalled_read() -> None:
    frames = text_stream("openai-chat", ["Hello", " wor", "ld"])
    records: list[streamfsm.RunRecord] = []
    config = StreamConfig(sinks=(records.append,))
    with FaultServerThread(script(frames[:2], Keepalive(0.05, 200))) as server:
        with streamfsm.http_client(http=HTTP, config=config) as http:
            body = {**BODIES["openai-chat"], "stream": True}
            with http.stream("POST", f"{server.base_url}/v1/chat/completions", json=body) as response:
                run = streamfsm.tap.run_of(response)
                timer = threading.Timer(0.3, run.abort, args=("stop pressed",))
                timer.start()
                started = time.monotonic()
                with pytest.raises(HTTP_LIB.ReadTimeout):
                    for _ in response.iter_raw():
                        pass
                timer.join()
    assert time.monotonic() - started < 5.0, "the keepalives lasted 10 s: the abort ended the read"
    (record,) = records
    assert (record["outcome"]["edge"], record["abort"]["source"]) == ("local_abort", "user")


async def test_a_followed_redirect_leaves_one_record_for_the_stream() -> None:
    frames = text_stream("openai-chat", ["Hi"])
    records: list[streamfsm.RunRecord] = []
    moved = (Status(307, (("location", "/v2/chat/completions"),), b""),)
    scripts = (moved, script(frames, End()))
    async with FaultServer(lambda request: scripts[min(request.seq, 1)]) as server:
        config = StreamConfig(sinks=(records.append,))
        async with streamfsm.async_http_client(http=HTTP, config=config, follow_redirects=True) as http:
            body = {**BODIES["openai-chat"], "stream": True}
            async with http.stream("POST", f"{server.base_url}/v1/chat/completions", json=body) as response:
                await response.aread()
    (record,) = records
    assert record["outcome"]["summary_key"] == "completed.finished"


async def test_a_cancelled_close_of_an_unread_error_body_still_leaves_its_record() -> None:
    records: list[streamfsm.RunRecord] = []
    body = b'{"error": {"type": "rate_limit_error", "message": "slow"}}'
    # The body trickles: the close's bounded read of it is under way when the cancellation comes.
    steps = (Headers(429, (("content-type", "application/json"),)), Send(body[:5]), Sleep(5.0), End())
    async with FaultServer(steps) as server:
        config = StreamConfig(sinks=(records.append,))
        async with streamfsm.async_http_client(http=HTTP, config=config) as http:
            request = {**BODIES["openai-chat"], "stream": True}
            with anyio.move_on_after(0.05):
                async with http.stream("POST", f"{server.base_url}/v1/chat/completions", json=request):
                    await anyio.sleep(1.0)  # cancelled here; the close then runs, and is cancelled too
    (record,) = records
    assert record["outcome"]["edge"] == "http_error"


def test_every_tap_transport_of_a_library_is_of_one_class() -> None:
    # The transport classes are made once per library: a class per call would cost each client a type and
    # make one client's transport another's stranger to isinstance.
    assert library("httpx") is library("httpx")
    first, second = streamfsm.tap.async_transport(http="httpx"), streamfsm.tap.async_transport(http="httpx")
    assert type(first) is type(second)
