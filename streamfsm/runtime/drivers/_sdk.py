"""The SDK drop-in: ``wrap()`` drives a stream from the ``openai`` or ``anthropic`` SDK through the machine.

    stream = await client.chat.completions.create(model=..., messages=..., stream=True)
    async with streamfsm.wrap(stream) as run:
        async for event in run:
            ...

    # Hand over the un-awaited call instead, and HTTP and connection errors are classified too:
    async with streamfsm.wrap(client.messages.create(..., stream=True)) as run:
        ...

    # A sync SDK stream gives a sync run:
    with streamfsm.wrap(sync_client.responses.create(..., stream=True)) as run:
        for event in run:
            ...

The run is the same as ``open_stream``'s (events, ``record``, the tool ledger, ``abort``, ``StreamFailed``):
``SdkRun`` and ``SyncSdkRun`` are ``Run`` subclasses that supply the source, like ``HttpRun`` does.

**What it takes.** Async: an ``openai`` ``AsyncStream`` of Chat Completions chunks or Responses events, an
``anthropic`` ``AsyncStream`` of raw message events or ``AsyncMessageStream`` (``client.messages.stream()``,
entered or not; its helper events are skipped), or an awaitable that produces one (awaited on entry, under the
connect watchdog). Sync: the ``Stream`` / ``MessageStream`` counterparts (and an un-entered
``MessageStreamManager``). The provider format is read from the object (its SDK by qualified class name, the
stream's item type, or the first item); ``provider=`` names it instead, and is checked against what is seen.
Neither SDK is imported: classes are recognised by name.

**Two ways to read.** The SDK sends the request (its auth, base URL, options, and retries up to the
headers); the body is then read by the run itself whenever it can be: an SSE body (the SDK's own SSE
decoder, a ``text/event-stream`` response: not Bedrock's AWS event stream) of an ``httpx``/``httpx2``
response that nobody has started to read, and the stream is not a ``MessageStream`` (whose snapshot the
caller may still ask for). The bytes go through the same SSE decoder and wire adapter as ``open_stream``'s,
so the run sees exactly what ``open_stream`` would (``[DONE]``, keepalives, raw delta keys,
``max_line_bytes``) and skips the SDK's per-item model building, which costs more than the whole of our
pipeline. Otherwise (a ``MessageStream``, a stream the caller already started to iterate, another body
encoding, a format the stream does not say) the run iterates the SDK's items and translates each one by
attribute access (``_adapters._sdk_items``), never ``model_dump``.

**Facts.** Status, allow-listed headers, request ids and the endpoint come from the SDK's ``response``; the
model and the request's shape from its request body (parsed once, when under 1 MiB). SDK exceptions are
classified once: ``APIStatusError`` (and openai's bare in-band ``APIError``) through
``provider_error_from_sdk``, connection faults through ``transport_facts`` (openai 3.x wraps httpx2 errors in
``APIConnectionError``; openai 2.x and anthropic let raw ``httpx``/``httpx2`` errors escape; both are read by
class name and chain), a JSON or shape error from the SDK's decoder as a protocol violation. Anything else
raised while connecting is not a transport fact and propagates as it was (recorded as ``consumer_error``).

**Watchdogs.** Like ``HttpRun``, each read waits in a cancel scope that the loop's watchdog cancels when the
earliest deadline passes (``_watchdog``): a network read when the run reads the body, an SDK item otherwise.
Sync runs check the deadline before each read and keep one watchdog thread per run which, when the deadline
passes (or ``abort()`` is called from another thread), shuts the socket down (``shutdown(SHUT_RDWR)``:
closing a socket from another thread does not wake a blocked ``recv``, measured), so the blocked read
returns; the fired flag, never the exception's message, decides the edge. Without an HTTP/1.1 socket to shut
(HTTP/2), the response is closed instead, which may not wake a blocked read. A sync connect (an un-entered
``MessageStreamManager``, whose ``__enter__`` sends the request) runs on a helper thread that the run waits
for until the connect deadline or ``abort()``; a stream that arrives after the run gave up is closed by that
thread.

**Where it differs from open_stream:**

* Timings start at ``wrap()``: for a stream the caller opened, the connect phase happened before it.
* On SDK items only (each forced by what the SDKs hide): openai swallows ``data: [DONE]`` and also ends
  silently at a clean EOF without it, so a Chat Completions iteration that ends *after a* ``finish_reason``
  counts as finished, and one that ends without any is ``eof_without_terminal`` (detail
  ``no_finish_reason``); the SDKs drop SSE comments and Anthropic pings, so no ``keepalive`` is counted (the
  idle watchdog is unaffected: keepalives never count as progress).
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import socket
import threading
import time
import typing
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, Final, overload

import anyio

from ...classify import (
    ProviderError,
    TransportKind,
    provider_error_from_event,
    provider_error_from_sdk,
    redact_text,
    redact_url,
    transport_facts,
)
from ...machine import Trigger
from ...wire import (
    FORMATS,
    HELPER_EVENTS,
    MALFORMED_JSON,
    NO_FINISH_REASON,
    UNEXPECTED_EVENT,
    UNEXPECTED_SHAPE,
    ProtocolViolation,
    SdkOpenAIChat,
    SdkSide,
    SdkTranslator,
    StreamEvent,
    adapter_for,
    event_stream_violation,
)
from ..core._config import Ids, StreamConfig
from ..core._errors import StreamFailed
from ..core._run_core import RunCore, Wire
from ..records._record import request_shape
from ._handle import ConsumerRun
from ._stream import Run, _no_chunks, body_chunks, sync_body_chunks
from ._sync_reads import socket_of
from ._sync_run import SyncRun
from ._watchdog import loop_time

__all__ = ["SDK_FORMAT_NAMES", "SdkRun", "SyncSdkRun", "wrap"]

_SDK_FORMATS: Final[Mapping[str, SdkSide]] = {
    name: fmt.sdk for name, fmt in FORMATS.items() if fmt.sdk is not None
}  # each format wrap() reads, by the SDK side its Format declares
SDK_FORMAT_NAMES: Final = tuple(_SDK_FORMATS)
"""The provider formats ``wrap()`` understands."""

_TRANSLATORS: Final[dict[str, type[SdkTranslator]]] = {
    name: sdk.translator for name, sdk in _SDK_FORMATS.items()
}
_SOLE_FORMAT: Final = {sdk.package: name for name, sdk in _SDK_FORMATS.items() if sdk.sole}
_MAX_REQUEST_BODY: Final = 1 << 20
_HTTP_FAMILIES: Final = frozenset({"httpx", "httpx2"})  # responses whose body wrap() can read itself
_SDKS: Final = frozenset(sdk.package for sdk in _SDK_FORMATS.values())

# What an object is, by (top-level module, class name) anywhere in its MRO.
_ASYNC_STREAM: Final = "async_stream"
_SYNC_STREAM: Final = "sync_stream"
_ASYNC_MANAGER: Final = "async_manager"
_SYNC_MANAGER: Final = "sync_manager"
_KINDS: Final[dict[tuple[str, str], tuple[str, bool]]] = {
    # (module, class) -> (kind, yields anthropic helper events)
    ("openai", "AsyncStream"): (_ASYNC_STREAM, False),
    ("openai", "Stream"): (_SYNC_STREAM, False),
    ("anthropic", "AsyncStream"): (_ASYNC_STREAM, False),
    ("anthropic", "Stream"): (_SYNC_STREAM, False),
    ("anthropic", "AsyncMessageStream"): (_ASYNC_STREAM, True),
    ("anthropic", "MessageStream"): (_SYNC_STREAM, True),
    ("anthropic", "BetaAsyncMessageStream"): (_ASYNC_STREAM, True),
    ("anthropic", "BetaMessageStream"): (_SYNC_STREAM, True),
    ("anthropic", "AsyncMessageStreamManager"): (_ASYNC_MANAGER, True),
    ("anthropic", "MessageStreamManager"): (_SYNC_MANAGER, True),
    ("anthropic", "BetaAsyncMessageStreamManager"): (_ASYNC_MANAGER, True),
    ("anthropic", "BetaMessageStreamManager"): (_SYNC_MANAGER, True),
    # openai's client.chat.completions.stream(): a manager whose stream wraps a plain Stream of chunks (its
    # _raw_stream), whose body the run reads itself like any other; its helper events are never needed.
    ("openai", "AsyncChatCompletionStreamManager"): (_ASYNC_MANAGER, False),
    ("openai", "ChatCompletionStreamManager"): (_SYNC_MANAGER, False),
    ("openai", "AsyncChatCompletionStream"): (_ASYNC_STREAM, False),
    ("openai", "ChatCompletionStream"): (_SYNC_STREAM, False),
    # boto3's bedrock-runtime converse_stream()["stream"]: botocore parses each message into an item
    ("botocore", "EventStream"): (_SYNC_STREAM, False),
}
_CHAT_HELPERS: Final = frozenset(
    {
        ("openai", "AsyncChatCompletionStreamManager"),
        ("openai", "ChatCompletionStreamManager"),
        ("openai", "AsyncChatCompletionStream"),
        ("openai", "ChatCompletionStream"),
    }
)


def _chat_helper(obj: object) -> bool:
    """openai's chat.completions.stream() manager, or the stream it gives: Chat Completions chunks."""
    return any(name in _CHAT_HELPERS for name in _names(obj))


def _raw_chat_stream(stream: Any) -> Any:
    """The plain ``Stream`` of chunks inside openai's ``ChatCompletionStream`` (the stream itself else)."""
    if not _chat_helper(stream):
        return stream
    try:
        return object.__getattribute__(stream, "_raw_stream")
    except AttributeError:
        raise TypeError(
            "this openai ChatCompletionStream has no raw stream: an SDK this wrap() does not know"
        ) from None


_SDK_ERROR: Final = "APIError"
_NOT_PROVIDER_ERRORS: Final = frozenset(
    {"APIConnectionError", "APITimeoutError", "APIResponseValidationError"}
)
_SHAPE_ERRORS: Final = frozenset(
    {("openai", "APIResponseValidationError"), ("anthropic", "APIResponseValidationError")}
)


def _top(klass: type) -> str:
    return str(getattr(klass, "__module__", "") or "").partition(".")[0]


def _names(obj: object) -> Iterator[tuple[str, str]]:
    for klass in type(obj).__mro__:
        yield _top(klass), klass.__qualname__


def _kind_of(obj: object) -> tuple[str, str, bool] | None:
    """(sdk, kind, helper events) of an SDK stream or stream manager, by qualified class name."""
    for name in _names(obj):
        found = _KINDS.get(name)
        if found is not None:
            return name[0], found[0], found[1]
    return None


def _sdk_error(exc: BaseException) -> str | None:
    """The SDK family of ``exc`` ("provider", "transport", "shape"); None if it is not an SDK error."""
    for top, name in _names(exc):
        if top in _SDKS:
            if (top, name) in _SHAPE_ERRORS:
                return "shape"
            if name in _NOT_PROVIDER_ERRORS:
                return "transport"
            if name == _SDK_ERROR or name == "APIStatusError" or (top, name) == ("botocore", "ClientError"):
                return "provider"
    return None


def _class_modules(tp: object, out: list[str], depth: int = 0) -> list[str]:
    """The modules of the classes in a (possibly Annotated / Union) type, bounded."""
    if depth > 4 or len(out) > 64:
        return out
    if isinstance(tp, type):
        out.append(str(getattr(tp, "__module__", "")))
        return out
    for arg in typing.get_args(tp):
        _class_modules(arg, out, depth + 1)
    return out


def _flavour_from_modules(modules: Iterable[str]) -> str | None:
    found = set()
    for module in modules:
        for name, sdk in _SDK_FORMATS.items():
            if sdk.modules and module.startswith(sdk.modules):
                found.add(name)
                break
    return found.pop() if len(found) == 1 else None


def _stream_hint(stream: object) -> tuple[str | None, bool]:
    """(format, known): the format the SDK stream says it yields (its private cast type), and whether the
    cast type was readable at all; a readable cast type of another kind (legacy completions) is refused."""
    try:
        cast = object.__getattribute__(stream, "_cast_to")
    except AttributeError:
        return None, False
    modules = _class_modules(cast, [])
    return _flavour_from_modules(modules), bool(modules)


def _awaitable_hint(source: object) -> tuple[str | None, str | None]:
    """(sdk, format) of an un-awaited SDK call, from the module of the coroutine's code."""
    frame = getattr(source, "cr_frame", None)
    module = getattr(frame, "f_globals", {}).get("__name__") if frame is not None else None
    if not isinstance(module, str):
        return None, None
    sdk = module.partition(".")[0]
    return (sdk if sdk in _SDKS else None), _flavour_from_modules([module])


def _flavour_of_item(item: object) -> str | None:
    module = str(getattr(type(item), "__module__", ""))
    flavour = _flavour_from_modules([module])
    if flavour is not None:
        return flavour
    return next((name for name, sdk in _SDK_FORMATS.items() if sdk.item is not None and sdk.item(item)), None)


_READ_BY_THE_RUN: Final = frozenset({"text/event-stream", "application/json", "text/html"})


def _sse_body_unread(stream: Any, response: Any) -> bool:
    """Whether the run can read the stream's body itself: an SSE body (the SDK reads it with its own
    ``SSEDecoder``, and it is served as ``text/event-stream``; Bedrock's AWS event stream is neither), or a
    JSON or HTML body where a stream was due (the run reads it whole and says what it is), of an
    ``httpx``/``httpx2`` response that nobody has started to read (once the SDK has, its decoder may hold
    part of the body)."""
    try:
        decoder = type(object.__getattribute__(stream, "_decoder"))
    except AttributeError:
        return False
    if decoder.__name__ != "SSEDecoder" or _top(decoder) not in _SDKS:
        return False
    if response is None or not any(_top(klass) in _HTTP_FAMILIES for klass in type(response).__mro__):
        return False
    content_type = str(response.headers.get("content-type", "")).partition(";")[0].strip().lower()
    return (
        content_type in _READ_BY_THE_RUN
        and not getattr(response, "is_stream_consumed", True)
        and not getattr(response, "is_closed", True)
    )


RETRY_COUNT: Final = "x-stainless-retry-count"  # as the tap reads it (tap/_transport.py's _Chains)
_MAX_SDK_RETRIES: Final = 100


def sdk_retries_of(response: Any) -> int:
    """How many times the SDK had already retried the request that got ``response``: the retry count the
    openai and anthropic SDKs send with each request (0 on the first, n on the n-th retry), read from the
    request the response carries. 0 when there is none to read."""
    try:
        value = response.request.headers.get(RETRY_COUNT)
    except Exception:
        return 0
    try:
        count = int(value)
    except (TypeError, ValueError):
        return 0
    return min(max(count, 0), _MAX_SDK_RETRIES)


def _check_provider(provider: str | None) -> str | None:
    if provider is None:
        return None
    if provider not in SDK_FORMAT_NAMES:
        valid = ", ".join(repr(p) for p in SDK_FORMAT_NAMES)
        raise ValueError(f"wrap() supports the provider formats {valid}, not {provider!r}")
    return provider


def _sdk_matches(provider: str, sdk: str) -> bool:
    return _SDK_FORMATS[provider].package == sdk


def _botocore_flavour(stream: object) -> str:
    """The format of a botocore ``EventStream``: only ConverseStream's is read (its operation says it)."""
    try:
        operation = object.__getattribute__(stream, "_operation_name")
    except AttributeError:
        operation = None
    for name, sdk in _SDK_FORMATS.items():
        if sdk.operation is not None and sdk.operation == operation:
            return name
    raise ValueError(f"wrap() supports boto3's ConverseStream event streams, not {operation!r}")


def _check_match(provider: str, sdk: str | None, flavour: str | None) -> None:
    if sdk is not None and not _sdk_matches(provider, sdk):
        raise ValueError(f"provider={provider!r} does not match a stream from the {sdk!r} SDK")
    if flavour is not None and flavour != provider:
        raise ValueError(f"provider={provider!r} does not match a stream of {flavour!r} items")


_log: Final = logging.getLogger("streamfsm")
_UNKNOWN_PROVIDER_ERROR: Final[ProviderError] = provider_error_from_event({"error": {}})


# -- the shared part ------------------------------------------------------------------------------------


class _SdkBase(ConsumerRun):
    """What the async and the sync SDK runs share: the source's description, its translator, its facts, and
    how its exceptions are classified."""

    def __init__(
        self,
        *,
        stream: Any,
        opener: Callable[[], Any] | None,
        closer: Callable[[Any, Any, Any], Any] | None,
        sdk: str | None,
        provider: str | None,
        flavour: str | None,
        helper_events: bool,
        config: StreamConfig | None,
        ids: Ids | Mapping[str, Any] | None,
    ) -> None:
        provider = _check_provider(provider)
        if provider is not None:
            _check_match(provider, sdk, flavour)
        core = RunCore(
            provider=provider or flavour or sdk or "sdk", model=None, body={}, url="", config=config, ids=ids
        )
        self._hold(core)
        self._response: Any = None  # the SDK stream's HTTP response, once there is one
        self._sdk_stream = stream
        self._opener = opener
        self._closer = closer
        self._sdk = sdk
        self._format: str | None = None
        self._given = provider
        self._helper_events = helper_events
        self._reads_body = False  # whether the run reads the SSE body itself, or the SDK's items
        self._core.read_fault = _read_fault
        known = provider or flavour
        if known is not None:
            self._use(known)

    # -- the format ---------------------------------------------------------------------------------------

    def _use(self, provider: str) -> None:
        self._format = provider
        self._core.use_format(provider)

    # -- the opened stream --------------------------------------------------------------------------------

    def _attach(self, stream: Any, mode: str) -> Any:
        """Take the opened SDK stream: check it, read its response's facts, and hand the core its headers and
        the wire to read with. Returns the chunk source: the response's byte chunks, or the SDK's items (see
        ``_ItemWire``)."""
        found = _kind_of(stream)
        if found is None or found[1] != mode:
            raise TypeError(
                f"expected an {'async' if mode == _ASYNC_STREAM else 'sync'} openai/anthropic SDK stream, "
                f"got {type(stream).__module__}.{type(stream).__qualname__}"
            )
        sdk, _, helper = found
        outer, stream = stream, _raw_chat_stream(stream)  # closed as the caller's object; read as the raw one
        if self._sdk is None:
            self._sdk = sdk
        self._helper_events = self._helper_events or helper
        flavour, readable = (_botocore_flavour(stream), True) if sdk == "botocore" else _stream_hint(stream)
        if sdk == "openai" and readable and flavour is None:
            raise ValueError("wrap() supports openai Chat Completions and Responses streams, not this one")
        if self._given is not None:
            _check_match(self._given, sdk, flavour)
        flavour = flavour or _SOLE_FORMAT.get(sdk)
        if self._format is None and flavour:
            self._use(flavour)
        self._sdk_stream = outer
        self._response = self._reads.response = response = getattr(stream, "response", None)
        self._core.request_left()
        self._response_facts(response)
        core = self._core
        wire: Wire
        self._reads_body = (
            self._format is not None and not self._helper_events and _sse_body_unread(stream, response)
        )
        if self._reads_body:
            assert self._format is not None
            wire = core.stream_wire(adapter_for(self._format))
            chunks = body_chunks(response) if mode == _ASYNC_STREAM else sync_body_chunks(response)
        else:
            wire = _ItemWire(core, response, self._format, self._sdk)
            chunks = _RawEvents(stream) if self._helper_events else stream
        core.headers(None, {}, wire)  # the status and headers, if any, are in the record already
        return chunks

    def _response_facts(self, response: Any) -> None:
        core = self._core
        status = getattr(response, "status_code", None)
        headers = getattr(response, "headers", None)
        known = type(status) is int and isinstance(headers, Mapping)
        core.source_facts(
            sdk_retries=sdk_retries_of(response),
            status=status if known else None,
            headers=headers if known else None,
        )
        try:
            request = response.request
            url = str(request.url)
            content = request.content
        except Exception:  # no request on this response, or a streamed request body
            return
        core.source_facts(url=redact_url(url))
        if isinstance(content, (bytes, bytearray)) and 0 < len(content) <= _MAX_REQUEST_BODY:
            try:
                body = json.loads(content)
            except (ValueError, RecursionError):
                return
            if isinstance(body, dict):
                model = body.get("model")
                core.source_facts(
                    request=request_shape(body),
                    model=redact_text(model, limit=128) if isinstance(model, str) and model else None,
                )

    # -- faults -------------------------------------------------------------------------------------------

    def _connect_failed(self, exc: Exception) -> StreamFailed | None:
        """The run's failure for an SDK or transport fault raised while connecting; None for anything else
        (the caller's own error, raised as it was)."""
        core = self._core
        family = _sdk_error(exc)
        provider = provider_error_from_sdk(exc)
        if provider is not None or family == "provider":
            response = getattr(exc, "response", None)
            if response is not None:
                self._response_facts(response)
            core.request_left()
            facts = core.http_error_facts(provider or _UNKNOWN_PROVIDER_ERROR)
            return core.fail(Trigger.HTTP_ERROR, facts, exc)
        transport = transport_facts(exc, headers_received=False)
        if transport.kind is TransportKind.UNKNOWN and family is None and not transport.markers:
            return None
        return core.fault(exc)


def _read_fault(core: RunCore, exc: Exception) -> StreamFailed:
    """How an SDK run reads the fault its read raised (``RunCore.read_fault``): its exceptions by class."""
    family = _sdk_error(exc)
    provider = provider_error_from_sdk(exc)
    if provider is not None or family == "provider":
        # openai raises in-band error data as a bare APIError; anthropic raises `event: error` as an
        # APIStatusError with status 200: the body decides, never the 200.
        facts = core.facts(provider=provider or _UNKNOWN_PROVIDER_ERROR)
        return core.fail(Trigger.PROVIDER_ERROR_EVENT, facts, exc)
    if isinstance(exc, json.JSONDecodeError):
        return core.fail(Trigger.PROTOCOL_VIOLATION, core.facts(detail=MALFORMED_JSON), exc)
    damaged = event_stream_violation(exc)  # botocore read a damaged AWS event-stream message
    if damaged is not None:
        return core.fail(Trigger.PROTOCOL_VIOLATION, core.facts(detail=damaged), exc)
    if family == "shape" or any(n == ("pydantic_core", "ValidationError") for n in _names(exc)):
        return core.fail(Trigger.PROTOCOL_VIOLATION, core.facts(detail=UNEXPECTED_SHAPE), exc)
    return core.fault(exc)


class _ItemWire:
    """An SDK's own iteration read as a wire: each item is one frame, translated by attribute access. Where
    the format was not known before the first item, that item decides it."""

    __slots__ = ("_core", "_response", "_sdk", "feed", "translator")

    def __init__(self, core: RunCore, response: Any, flavour: str | None, sdk: str | None) -> None:
        self._core, self._response, self._sdk = core, response, sdk
        self.translator: SdkTranslator | None = None
        self.feed: Callable[[Any], list[StreamEvent]] = self._first_item
        if flavour is not None:
            self._translate(flavour)

    def _translate(self, flavour: str) -> None:
        translator = self.translator = _TRANSLATORS[flavour]()
        self._core.read_with(translator)  # its anomalies are the record's wire evidence, as on the wire
        self.feed = translator.feed_item

    def _first_item(self, item: Any) -> list[StreamEvent]:
        flavour = _flavour_of_item(item)
        if flavour is None or (self._sdk is not None and not _sdk_matches(flavour, self._sdk)):
            raise ProtocolViolation(UNEXPECTED_EVENT, 0)
        self._core.use_format(flavour)
        self._translate(flavour)
        return self.feed(item)

    def frames(self, item: Any) -> list[Any]:
        if self._response is not None:
            self._core.bytes_read(getattr(self._response, "num_bytes_downloaded", 0))
        return [item]  # an SDK item is one frame

    def end(self) -> list[StreamEvent]:
        return self.translator.end() if self.translator is not None else []

    def eof_detail(self) -> str | None:
        translator = self.translator
        if isinstance(translator, SdkOpenAIChat) and translator.finish_raw is None:
            return NO_FINISH_REASON
        return None


# -- async --------------------------------------------------------------------------------------------------


class SdkRun(_SdkBase, Run):
    """A run over an async SDK stream (or the awaitable that opens one). Make one with ``wrap()``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._next_chunk: Callable[[], Awaitable[Any]] = _no_chunks

    async def __aenter__(self) -> SdkRun:
        await super().__aenter__()
        return self

    async def _connect(self) -> None:
        self._core.begin()
        stream = self._sdk_stream
        if stream is None:
            stream = self._sdk_stream = await self._open()  # closed at cleanup even if _attach refuses it
        self._next_chunk = _anext_of(self._attach(stream, _ASYNC_STREAM))

    async def _open(self) -> Any:
        assert self._opener is not None
        deadline, edge = self._core.timing.connect_deadline()
        stream: Any = None
        with anyio.CancelScope(deadline=loop_time(deadline)) as scope:
            self._reads.scope = scope
            try:
                stream = await self._opener()
            except Exception as exc:
                # Raised from a call, never from a local: the raising frame would hold it, and it that frame.
                raise self._connect_failed(exc) or exc  # noqa: B904  # chained from exc by the core
        self._reads.scope = None
        if scope.cancelled_caught:
            self._core.request_left()  # unknown; the request may well have left: say it may be delivered
            raise self._core.timed_out(edge)
        return stream

    async def _close_source(self) -> None:
        stream = self._sdk_stream
        if stream is None:
            return
        if self._closer is not None:  # an entered MessageStreamManager
            await self._closer(None, None, None)
            return
        closed = getattr(stream, "close", None)
        result = closed() if callable(closed) else None
        if inspect.isawaitable(result):
            await result


class _RawEvents:
    """A ``MessageStream``'s items without its helper events, each of which repeats a raw event: skipped
    inside one read, not read, applied and dropped one by one."""

    __slots__ = ("_stream",)

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __aiter__(self) -> _RawEvents:
        return self

    async def __anext__(self) -> Any:
        stream = self._stream
        while True:
            item = await stream.__anext__()
            if getattr(item, "type", None) not in HELPER_EVENTS:
                return item

    def __iter__(self) -> _RawEvents:
        return self

    def __next__(self) -> Any:
        stream = self._stream
        while True:
            item = next(stream)
            if getattr(item, "type", None) not in HELPER_EVENTS:
                return item


def _anext_of(stream: Any) -> Callable[[], Awaitable[Any]]:
    anext = getattr(stream, "__anext__", None)
    if callable(anext):
        return anext  # type: ignore[no-any-return]
    return stream.__aiter__().__anext__  # type: ignore[no-any-return]


# -- sync ---------------------------------------------------------------------------------------------------


class _OpenAttempt:
    """One opener call on a helper thread, and the caller's bounded wait for it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._finished = False
        self._abandoned = False
        self.stream: Any = None
        self.error: BaseException | None = None

    def finish(self, stream: Any, error: BaseException | None) -> bool:
        """The helper's result; False when the caller has stopped waiting (the helper then cleans up)."""
        with self._cond:
            if self._abandoned:
                return False
            self._finished, self.stream, self.error = True, stream, error
            self._cond.notify_all()
            return True

    def take_error(self) -> BaseException | None:
        # Handed over once: the helper's frame is in the error's traceback and holds this attempt (a cycle).
        error, self.error = self.error, None
        return error

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def wait(self, deadline: float, stop: Callable[[], bool]) -> bool:
        """Wait until the opener finished (True), or ``deadline`` (monotonic) passed or ``stop()`` (False)."""
        with self._cond:
            try:
                while not self._finished and not stop():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(None if left == math.inf else left)
            finally:
                self._abandoned = not self._finished  # also on KeyboardInterrupt while waiting
            return self._finished


class SyncSdkRun(_SdkBase, SyncRun):
    """A run over a sync SDK stream: ``with wrap(stream) as run: for event in run: ...``.

    The same interface as the async run, minus what needs an event loop (``async with``): ``with
    run.tool(call_id):``, ``tool_started`` / ``tool_finished`` and ``abort`` (also from another thread) work
    as there."""

    _what = "this run wraps a sync SDK stream"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._opening: _OpenAttempt | None = None  # set while a manager's __enter__ runs on its helper

    def _close_sync(self) -> None:
        stream = self._sdk_stream
        if stream is not None:
            if self._closer is not None:  # an entered MessageStreamManager
                self._closer(None, None, None)
            elif callable(getattr(stream, "close", None)):
                stream.close()

    def _wake(self) -> None:
        opening = self._opening
        if opening is not None:
            opening.wake()

    # -- connecting -------------------------------------------------------------------------------------

    def _connect_sync(self) -> None:
        self._core.begin()
        stream = self._sdk_stream
        if stream is None:
            stream = self._sdk_stream = self._open_sync()
        self._iterator: Iterator[Any] = _next_source(self._attach(stream, _SYNC_STREAM))
        self._reads.socket = socket_of(self._response) or _botocore_socket(stream)

    def _open_sync(self) -> Any:
        """Call the opener (a ``MessageStreamManager.__enter__`` or the caller's zero-argument callable,
        which send the request and wait for the headers) on a helper thread, so that the connect deadline
        and ``abort()`` end the wait, as the cancel scope does on the async path. If we stop waiting, the
        helper closes what the opener still opens."""
        assert self._opener is not None
        opener, closer = self._opener, self._closer
        deadline, edge = self._core.timing.connect_deadline()
        attempt = _OpenAttempt()

        def call() -> None:
            stream: Any = None
            error: BaseException | None = None
            try:
                stream = opener()
            except BaseException as exc:  # handed to the caller's thread, or dropped if it stopped waiting
                error = exc
            handed = attempt.finish(stream, error)
            failed, error = error is not None, None  # this frame is in the error's traceback: a cycle
            if not handed and not failed:  # nobody will read it: close what the opener opened
                try:
                    if closer is not None:
                        closer(None, None, None)
                    elif callable(getattr(stream, "close", None)):
                        stream.close()
                except Exception as exc:
                    _log.warning("closing an abandoned SDK stream failed (%s)", type(exc).__name__)

        self._opening = attempt
        threading.Thread(target=call, name="streamfsm-connect", daemon=True).start()
        try:
            finished = attempt.wait(deadline, lambda: self._core.abort_request is not None)
        finally:
            self._opening = None
        if not finished:
            self._core.request_left()  # unknown; the request may well have left: say it may be delivered
            raise self._core.timed_out(edge)
        error = attempt.take_error()
        if error is not None:
            try:
                raise (self._connect_failed(error) if isinstance(error, Exception) else None) or error
            finally:
                del error  # this frame is in its traceback: a cycle
        return attempt.stream


def _botocore_socket(stream: object) -> Any:
    """The socket under a botocore ``EventStream`` (its urllib3 response's HTTP/1.1 connection), for the
    watchdog and ``abort()`` to shut under a blocked read (botocore's stream has no httpx response); None for
    anything else."""
    if _top(type(stream)) != "botocore":
        return None
    try:
        raw = object.__getattribute__(stream, "_raw_stream")
        sock = raw.connection.sock if raw.version == 11 else None
    except Exception:  # another botocore or urllib3 generation: the read is bounded by botocore's own timeout
        return None
    return sock if isinstance(sock, socket.socket) else None


def _next_source(stream: Any) -> Iterator[Any]:
    if callable(getattr(stream, "__next__", None)):
        return stream  # type: ignore[no-any-return]
    return iter(stream)


# -- the entry point ----------------------------------------------------------------------------------------


@overload
def wrap(
    sdk_stream: AsyncIterable[Any] | Awaitable[Any] | AbstractAsyncContextManager[Any],
    *,
    provider: str | None = None,
    ids: Ids | Mapping[str, Any] | None = None,
    config: StreamConfig | None = None,
) -> SdkRun: ...


@overload
def wrap(
    sdk_stream: Iterable[Any] | AbstractContextManager[Any] | Callable[[], Any],
    *,
    provider: str | None = None,
    ids: Ids | Mapping[str, Any] | None = None,
    config: StreamConfig | None = None,
) -> SyncSdkRun: ...


def wrap(
    sdk_stream: object,
    *,
    provider: str | None = None,
    ids: Ids | Mapping[str, Any] | None = None,
    config: StreamConfig | None = None,
) -> SdkRun | SyncSdkRun:
    """Drive an ``openai`` / ``anthropic`` SDK stream through the machine; see the module docstring.

    ``sdk_stream``: an async or sync SDK stream, an anthropic ``MessageStreamManager`` (async or sync), an
    un-awaited call that returns an async SDK stream, or a zero-argument callable that makes a sync SDK
    call (``lambda: client.chat.completions.create(..., stream=True)``): the call then runs under the run
    (on a helper thread, within the connect deadline), so its HTTP and connection errors are diagnosed and
    recorded like any other failure. ``provider``: one of ``SDK_FORMAT_NAMES`` (the formats whose
    ``Format.sdk`` says how); detected when None. Returns an ``SdkRun`` (``async with``) or, for a sync
    stream, a ``SyncSdkRun`` (``with``). Raises ``TypeError`` for anything else, ``ValueError`` for a
    provider that is unknown or does not match the stream.
    """
    _check_provider(provider)
    found = _kind_of(sdk_stream)
    common: dict[str, Any] = {"provider": provider, "config": config, "ids": ids}
    if found is not None:
        sdk, kind, helper = found
        flavour: str | None
        if sdk in _SOLE_FORMAT:
            flavour, readable = _SOLE_FORMAT[sdk], True
        elif sdk == "botocore":
            flavour, readable = _botocore_flavour(sdk_stream), True
        elif _chat_helper(sdk_stream):
            flavour, readable = "openai-chat", True
        else:
            flavour, readable = _stream_hint(sdk_stream)
        if readable and flavour is None:
            raise ValueError("wrap() supports openai Chat Completions and Responses streams, not this one")
        if kind in (_ASYNC_MANAGER, _SYNC_MANAGER):
            manager: Any = sdk_stream
            if kind == _ASYNC_MANAGER:
                return SdkRun(
                    stream=None,
                    opener=manager.__aenter__,
                    closer=manager.__aexit__,
                    sdk=sdk,
                    flavour=flavour,
                    helper_events=helper,
                    **common,
                )
            return SyncSdkRun(
                stream=None,
                opener=manager.__enter__,
                closer=manager.__exit__,
                sdk=sdk,
                flavour=flavour,
                helper_events=helper,
                **common,
            )
        cls = SdkRun if kind == _ASYNC_STREAM else SyncSdkRun
        return cls(
            stream=sdk_stream,
            opener=None,
            closer=None,
            sdk=sdk,
            flavour=flavour,
            helper_events=helper,
            **common,
        )
    if inspect.isawaitable(sdk_stream):
        awaitable = sdk_stream
        maker, made = _awaitable_hint(awaitable)

        async def opener() -> Any:
            return await awaitable

        return SdkRun(
            stream=None, opener=opener, closer=None, sdk=maker, flavour=made, helper_events=False, **common
        )
    if callable(sdk_stream):  # a sync call, made under the run; its stream says what it is once made
        if inspect.iscoroutinefunction(sdk_stream):
            raise TypeError(
                "wrap() takes an async call un-awaited: wrap(client...create(...)), not the function"
            )
        call: Callable[[], Any] = sdk_stream
        return SyncSdkRun(
            stream=None, opener=call, closer=None, sdk=None, flavour=None, helper_events=False, **common
        )
    raise TypeError(
        "wrap() takes a stream from the openai or anthropic SDK (or the un-awaited call that opens one, or"
        " a zero-argument callable making a sync call), "
        f"not {type(sdk_stream).__module__}.{type(sdk_stream).__qualname__}"
    )
