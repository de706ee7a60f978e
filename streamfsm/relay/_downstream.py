"""One relayed exchange as its client sees it: the response written downstream, each chunk reported to the
run once the client took it, under a write deadline (a non-streaming answer held until it is whole); the end
as the upstream ended it, or cut with the format's in-band error event; the answers given before anything
streamed (refused, upstream unreachable or broken, shut down); and the listener for the client's
disconnect."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, MutableMapping
from typing import Any, Final

import anyio
import anyio.lowlevel
import httpx

from ..classify import AbortSource
from ..runtime import Finish, RelayClose
from ..tap import TapRun, failure_of, run_of
from ..wire import FORMATS
from ._limits import Held
from ._relayed import RelayedRun

__all__ = ["HOP_BY_HOP", "REQUEST_ID", "SHUTDOWN", "Downstream", "answer", "connection_named"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

log: Final = logging.getLogger("streamfsm.relay")

# RFC 9110 7.6.1: meaningful for one connection only, never forwarded (plus whatever Connection names).
HOP_BY_HOP: Final = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
REQUEST_ID: Final = b"x-request-id"
_RELAY_ID: Final = b"x-streamfsm-request-id"
_CUT_EDGES: Final = frozenset(
    {"disconnected", "eof_without_terminal", "idle_timeout", "first_token_timeout", "total_timeout"}
)
_TIMEOUT_EDGES: Final = frozenset({"idle_timeout", "first_token_timeout", "total_timeout"})
# Failures that break the stream at the chunk that carried them: what follows is not passed on.
_CUT_AT: Final = frozenset({"protocol_violation"})
_UPSTREAM_ERROR: Final = "provider_error_event"
_JSON: Final = [(b"content-type", b"application/json")]
SHUTDOWN: Final = "the relay shut down"
_STREAM_HEADERS: Final = [(b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")]
_STREAM_SET: Final = frozenset({b"content-length", *(name for name, _ in _STREAM_HEADERS)})


class _DownstreamWriteFailed(OSError):
    """The client did not take a write in time (it stopped reading), or the server failed the write."""


class Downstream:
    """One request's side towards its client: its state (shared with the task that listens for the client's
    disconnect) and every write to it."""

    __slots__ = (
        "answer",
        "client_gone",
        "max_answer",
        "method",
        "relayed",
        "request_id",
        "route",
        "runs",
        "send",
        "sse",
        "started",
        "write_timeout",
    )

    def __init__(self, request_id: str, method: str, route: str, send: Send, write_timeout: float) -> None:
        self.request_id = request_id
        self.method = method
        self.route = route  # the request's path, redacted
        self.send = send
        self.write_timeout = write_timeout
        self.relayed: RelayedRun | None = None  # the run whose answer the client gets
        self.runs: list[RelayedRun] = []  # every run the tap started for this exchange, held until release()
        self.client_gone = False
        self.started = False  # the response's headers went downstream
        self.sse = False
        # A non-streaming answer is kept whole for its run (to read at its end): its bytes are taken from the
        # relay's answer budget, and one is at most ``max_answer`` bytes.
        self.answer: Held | None = None
        self.max_answer = 0

    async def watch(self, receive: Receive, scope: anyio.CancelScope) -> None:
        """The ASGI server says the client disconnected: end the run as ``client_abort`` and the self."""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
        self.client_gone = True
        relayed = self.relayed
        if relayed is not None:
            relayed.run.abort("the client disconnected", source="client")
        scope.cancel()

    def take_on(self, run: TapRun) -> None:
        """The tap starts a run for this exchange (``tap.relaying``): the relay takes it on."""
        self.runs.append(RelayedRun.started(run))

    def relayed_of(self, run: TapRun) -> RelayedRun:
        """The relay's side of ``run``, one the tap started for this exchange."""
        for relayed in self.runs:
            if relayed.run is run:
                return relayed
        relayed = RelayedRun(run)  # not started inside this exchange's block: taken on now
        self.runs.append(relayed)
        return relayed

    async def stream(
        self, response: httpx.Response, opened: tuple[Any, AsyncIterator[bytes]] | None = None
    ) -> None:
        """The upstream's response, chunk by chunk as it is read, each reported to the run once written;
        ``opened``: a route table's attempt, its start read already and held back from the client (the run's
        kept events, and its chunks: ``_fallback.Opening``)."""
        run: TapRun | None = run_of(response)
        relayed = self.relayed = self.relayed_of(run) if run is not None else None
        if opened is not None:
            events, chunks = opened
        else:
            events = run.keep_events() if run is not None else None
            chunks = response.aiter_raw()
        if relayed is not None:
            relayed.hold()  # the record counts every write of ours, to the response's end (``release``)
        kept = self.answer if run is not None and run.streams is False else None  # the run's whole copy
        if kept is not None:
            declared = response.headers.get("content-length", "")
            broken = self._over(kept, int(declared)) if declared.isdigit() else None
            if broken is not None:
                why = f"the upstream's answer is over the relay's {broken} ({declared} bytes)"
                written = await answer(self.send, 502, self.request_id, "upstream_error", why)
                relayed.refused_answer(why, broken, written)  # type: ignore[union-attr]
                return
        size = 0
        headers = _response_headers(response.headers.raw, self.request_id, sse=_is_stream(response))
        start = {"type": "http.response.start", "status": response.status_code, "headers": headers}
        write_timeout = self.write_timeout
        if relayed is not None:
            relayed.cancel_means(AbortSource.APP, SHUTDOWN, RelayClose.RELAY_SHUTDOWN)
        # A non-streaming answer is passed on once whole (its run holds a copy to its end anyway): an upstream
        # that breaks it, or an answer past a limit, is then the relay's own answer naming the request id,
        # which an SDK raises as a status error carrying it, never a cut transfer ("Connection error.").
        held: list[bytes] | None = [] if kept is not None else None
        # One deadline for the whole stream, armed around each write and disarmed for each read (a scope
        # per write cost a scope and a loop timer each).
        writes = anyio.CancelScope()
        try:
            with writes:
                if held is None:
                    writes.deadline = anyio.current_time() + write_timeout
                    await self.send(start)
                    if writes.cancel_called:  # taken after its deadline: failed, before a read takes it
                        raise TimeoutError
                    writes.deadline = math.inf
                    self.started, self.sse = True, _is_stream(response)
                    if relayed is not None:
                        relayed.relayed_bytes(0)
                async for chunk in chunks:
                    if self.client_gone:
                        break
                    if run is not None and run.failure is not None and self.sse and _edge(run) in _CUT_AT:
                        # The chunk that broke the stream is not passed on: the client hears the failure
                        # (the format's error event) and never what followed it.
                        if events:
                            events.clear()
                        break
                    if held is not None and kept is not None:
                        size += len(chunk)
                        broken = self._over(kept, size)
                        if broken is not None:
                            why = f"the upstream's answer passed the relay's {broken}"
                            written = await answer(self.send, 502, self.request_id, "upstream_error", why)
                            relayed.refused_answer(why, broken, written)  # type: ignore[union-attr]
                            log.warning("%s: answered 502 [request_id=%s]", why, self.request_id)
                            return
                        held.append(chunk)
                        continue
                    writes.deadline = anyio.current_time() + write_timeout
                    await self.send({"type": "http.response.body", "body": chunk, "more_body": True})
                    if writes.cancel_called:
                        raise TimeoutError
                    writes.deadline = math.inf
                    if relayed is not None:
                        if events and isinstance(events[-1], Finish):  # nothing follows the terminal
                            # The server writes into a connection it may already know is gone (uvicorn:
                            # silently): let a disconnect it saw reach us before the terminal counts as
                            # delivered.
                            await anyio.lowlevel.checkpoint()
                            if self.client_gone:
                                break
                        relayed.report(events, len(chunk))
                        if relayed.run.failure is not None and _edge(relayed.run) == _UPSTREAM_ERROR:
                            relayed.relayed_error("upstream")  # the provider's own error event, passed on
                else:
                    whole = held is not None and not self.client_gone and not _broken_whole(run)
                    if whole and not await self._pass_held(start, held or []):
                        raise TimeoutError
                    if relayed is not None and not self.client_gone:
                        # Read at the body's end (a whole answer's, a decoder's last bytes): the events of
                        # bytes the client took already.
                        if events:
                            relayed.report(events, 0)
                        if relayed.run.failure is not None and _edge(relayed.run) == _UPSTREAM_ERROR:
                            relayed.relayed_error("upstream")
            if writes.cancelled_caught:
                raise TimeoutError
        except anyio.get_cancelled_exc_class():
            if relayed is not None and not relayed.run.diagnosis and not self.client_gone:  # in a write
                relayed.run.abort(SHUTDOWN, source=AbortSource.APP)
                relayed.relay_closed(RelayClose.RELAY_SHUTDOWN)
            raise
        except TimeoutError:
            self._write_failed("the client did not take a write in time")
            return
        except OSError as exc:  # ASGI servers raise an OSError for a write that failed (uvicorn: none)
            self._write_failed(f"the write failed ({type(exc).__name__})")
            return
        except httpx.HTTPError as exc:
            failure = failure_of(exc)
            if self.client_gone:
                return
            if run is not None and run.finished:
                # The format's terminal event came: a transfer that then breaks (no chunked terminator, a
                # reset) is evidence, not a failure. The client got the whole answer; end it cleanly.
                try:
                    taken = held is None or await self._pass_held(start, held)
                except OSError as error:
                    self._write_failed(f"the write failed ({type(error).__name__})")
                    return
                if not taken:
                    self._write_failed("the client did not take a write in time")
                    return
                await self._end()
                return
            await self._cut(response, relayed, failure.record["summary"]["title"] if failure else None)
            return
        finally:
            if relayed is not None and relayed.run.finished and not relayed.terminal_relayed:
                # The answer is whole upstream but its end never reached the client: not completed.
                relayed.relay_closed(
                    RelayClose.CLIENT_ABORT if self.client_gone else RelayClose.CLIENT_WRITE_FAILED
                )
        if self.client_gone:
            return
        if run is not None and run.failure is not None and _edge(run) in _CUT_EDGES | _CUT_AT:
            await self._cut(response, relayed, run.failure.record["summary"]["title"])
            return
        await self._end()

    async def _pass_held(self, start: Message, held: list[bytes]) -> bool:
        """A whole answer, held: its response and body downstream (the run's events are reported after);
        False: the client did not take them in time."""
        body = b"".join(held)
        held.clear()
        relayed = self.relayed
        with anyio.move_on_after(self.write_timeout) as writes:
            await self.send(start)
            self.started = True
            if relayed is not None:
                relayed.relayed_bytes(0)
            if body:
                await self.send({"type": "http.response.body", "body": body, "more_body": True})
        if writes.cancel_called:
            return False
        if relayed is not None:
            relayed.relayed_bytes(len(body))
        return True

    async def _end(self) -> None:
        with anyio.move_on_after(self.write_timeout):
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})
            if self.relayed is not None and not self.client_gone:
                self.relayed.relayed_end()

    def _over(self, kept: Held, size: int) -> str | None:
        """The limit an answer of ``size`` bytes would pass, or None once its room is taken."""
        if size > self.max_answer:
            return "max_answer_bytes"
        if not kept.take_now(size):
            return "answer_budget_bytes"
        return None

    def release(self) -> None:
        """The exchange is over: the run's record, held for our last writes, goes out; the answer's room in
        the budget is given back."""
        if self.answer is not None:
            self.answer.release()
        for relayed in {id(r): r for r in (*self.runs, self.relayed) if r is not None}.values():
            relayed.release()

    def _write_failed(self, why: str) -> None:
        relayed = self.relayed
        if relayed is not None and relayed.run.diagnosis is None:
            relayed.run.stopped(_DownstreamWriteFailed(why))
        log.warning("%s: the response was cut [request_id=%s]", why, self.request_id)

    async def _cut(
        self,
        response: httpx.Response,
        relayed: RelayedRun | None,
        title: str | None,
    ) -> None:
        """The upstream failed mid-stream: the format's in-band error event, then the response ends without
        its end (the ASGI server closes the connection), so that no client can take it for a clean end."""
        run = relayed.run if relayed is not None else None
        message = f"streamfsm relay: the upstream stream failed: {title or 'the connection broke'}"
        message += f" (request id {self.request_id})"
        if not self.started:  # a whole answer, held: nothing went yet, so the client gets the relay's answer
            status = 504 if run is not None and _edge(run) in _TIMEOUT_EDGES else 502
            self._answered(await answer(self.send, status, self.request_id, "upstream_error", message))
            log.warning(
                "upstream answer failed, answered %d [request_id=%s run_id=%s]",
                status,
                self.request_id,
                run.run_id if run is not None else "-",
            )
            return
        provider = run.provider if run is not None else None
        event = _error_event(provider, message) if _is_stream(response) else b""
        if event:
            with anyio.move_on_after(self.write_timeout):
                await self.send({"type": "http.response.body", "body": event, "more_body": True})
                if relayed is not None and not self.client_gone:
                    relayed.relayed_error("relay", len(event))
        log.warning(
            "upstream stream failed, downstream response cut [request_id=%s run_id=%s]",
            self.request_id,
            run.run_id if run is not None else "-",
        )

    async def shut_down(self) -> None:
        """The relay is going away mid-exchange: the client learns it (the format's error event, or a 503
        before the response started); the run was recorded as ``relay_shutdown``."""
        relayed = self.relayed
        run = relayed.run if relayed is not None else None
        message = f"streamfsm relay: {SHUTDOWN} (request id {self.request_id})"
        if not self.started:
            self._answered(await answer(self.send, 503, self.request_id, "relay_shutdown", SHUTDOWN))
        elif self.sse:
            event = _error_event(run.provider if run is not None else None, message)
            await self.send({"type": "http.response.body", "body": event, "more_body": True})
            if relayed is not None:
                relayed.relayed_error("relay", len(event))
        log.warning(
            "%s: the response was cut [request_id=%s run_id=%s]",
            SHUTDOWN,
            self.request_id,
            run.run_id if run is not None else "-",
        )

    async def refuse(self, status: int, why: str, *, close: bool = False) -> int:
        """Answer ``status`` before anything went upstream: the request is not one the relay forwards; the
        answer's body bytes the client took."""
        log.warning(
            "refused %s %s: %d %s [request_id=%s]",
            self.method,
            self.route,
            status,
            why,
            self.request_id,
        )
        # the ASGI server closes the connection after this answer (uvicorn: h11 and httptools)
        extra = [(b"connection", b"close")] if close else []
        return await answer(self.send, status, self.request_id, "invalid_request", why, extra)

    async def upstream_failed(self, status: int, why: str, exc: BaseException) -> None:
        """The upstream did not answer (``status``: 502 or 504); the client hears why, unless it left."""
        failure = failure_of(exc)
        title = failure.record["summary"]["title"] if failure is not None else type(exc).__name__
        run_id = failure.record.run_id if failure is not None else "-"
        log.warning(
            "%s %s: %s (%s) [request_id=%s run_id=%s]",
            self.method,
            self.route,
            why,
            title,
            self.request_id,
            run_id,
        )
        if not self.client_gone:
            self._answered(
                await answer(self.send, status, self.request_id, "upstream_error", f"{why}: {title}")
            )

    def _answered(self, written: int) -> None:
        """The relay answered for the upstream (a 502, 504 or 503, whole): each held run counts it."""
        if written:
            for relayed in self.runs:
                relayed.relayed_bytes(written)
                relayed.relayed_end()


def _broken_whole(run: TapRun | None) -> bool:
    """A held whole answer that broke (cut, stalled, torn at its end): the relay answers for it."""
    return run is not None and _edge(run) in _CUT_EDGES


def _edge(run: TapRun) -> str | None:
    failure = run.failure
    return None if failure is None else failure.record["outcome"]["edge"]


def connection_named(headers: Iterable[tuple[bytes, bytes]]) -> set[bytes]:
    named: set[bytes] = set()
    for key, value in headers:
        if key.lower() == b"connection":
            named.update(token.strip().lower() for token in value.split(b","))
    return named


def _response_headers(
    headers: list[tuple[bytes, bytes]], request_id: str, *, sse: bool = False
) -> list[tuple[bytes, bytes]]:
    # An event stream's length is not kept: a failed upstream ends it with an error event of the relay's;
    # and no cache or buffering proxy between the relay and its client may hold it back.
    drop = HOP_BY_HOP | connection_named(headers) | (_STREAM_SET if sse else set())
    out = [(k, v) for k, v in headers if k.lower() not in drop]
    if sse:
        out += _STREAM_HEADERS
    rid = request_id.encode("latin-1")
    if not any(k.lower() == REQUEST_ID for k, _ in out):  # the provider's own request id stays
        out.append((REQUEST_ID, rid))
    out.append((_RELAY_ID, rid))
    return out


def _is_stream(response: httpx.Response) -> bool:
    """Whether ``response`` streams: its format's stream content type (SSE when its format is not known)."""
    run = run_of(response)
    fmt = FORMATS.get(run.provider) if run is not None else None
    content_type: str = response.headers.get("content-type", "")
    return (fmt or FORMATS["openai-chat"]).is_stream(content_type)


def _error_event(provider: str | None, message: str) -> bytes:
    """The format's own in-band error event, which the official SDKs raise on (OpenAI's when not known)."""
    fmt = FORMATS.get(provider) if provider is not None else None
    return (fmt or FORMATS["openai-chat"]).in_band_error(message)


async def answer(
    send: Send,
    status: int,
    request_id: str,
    kind: str,
    message: str,
    extra: Iterable[tuple[bytes, bytes]] = (),
) -> int:
    """A JSON error answer; the body's bytes the client's connection took (0: not in time)."""
    body = json.dumps(
        {"error": {"type": kind, "message": message, "request_id": request_id}}, ensure_ascii=True
    ).encode()
    rid = request_id.encode("latin-1")
    headers = [
        *_JSON,
        (b"content-length", str(len(body)).encode()),
        (REQUEST_ID, rid),
        (_RELAY_ID, rid),
        *extra,
    ]
    with anyio.move_on_after(10.0):
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})
        return len(body)
    return 0
