"""An encoded response body (gzip, deflate, what the HTTP library supports), decoded by the library's own
decoders, chosen as its ``Response`` chooses them, over the response's raw stream.

Not ``aiter_bytes``: its generator, closed after a decoding error, leaves the response in a reference cycle on
httpx before 0.28 (a ``GeneratorExit`` held by contextlib's frame), and the run frees what it holds by
reference counting. The transport tap uses the same decoder on its copy of the bytes.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any


def content_decoder(response: Any) -> Any:
    """The decoder for ``response``'s content encodings from its library (``httpx`` or ``httpx2``), or None
    for a body that is not encoded (an unknown encoding is passed through, as the library does)."""
    codecs = importlib.import_module(f"{type(response).__module__.split('.')[0]}._decoders")
    found = [
        codecs.SUPPORTED_DECODERS[name]()
        for value in response.headers.get_list("content-encoding", split_commas=True)
        if (name := value.strip().lower()) in codecs.SUPPORTED_DECODERS and name != "identity"
    ]
    if not found:
        return None
    return found[0] if len(found) == 1 else codecs.MultiDecoder(children=found)


def as_bytes(decoded: Any) -> bytes:
    """httpx's decoders return bytes; httpx2's yield them."""
    return decoded if isinstance(decoded, bytes) else b"".join(decoded)


class _Decoded:
    __slots__ = ("_decoder", "_ended", "_next")

    def __init__(self, next_raw: Callable[[], Awaitable[bytes]], decoder: Any) -> None:
        self._next, self._decoder, self._ended = next_raw, decoder, False

    def __aiter__(self) -> _Decoded:
        return self

    async def __anext__(self) -> bytes:
        if self._ended:
            raise StopAsyncIteration
        try:
            chunk = await self._next()
        except StopAsyncIteration:
            self._ended = True
            return as_bytes(self._decoder.flush())
        return as_bytes(self._decoder.decode(chunk))


class _SyncDecoded:
    __slots__ = ("_decoder", "_ended", "_raw")

    def __init__(self, raw: Iterator[bytes], decoder: Any) -> None:
        self._raw, self._decoder, self._ended = raw, decoder, False

    def __iter__(self) -> _SyncDecoded:
        return self

    def __next__(self) -> bytes:
        if self._ended:
            raise StopIteration
        try:
            chunk = next(self._raw)
        except StopIteration:
            self._ended = True
            return as_bytes(self._decoder.flush())
        return as_bytes(self._decoder.decode(chunk))


def decoded_chunks(response: Any) -> AsyncIterator[bytes]:
    """The decoded chunks of an async response's body."""
    raw: AsyncIterator[bytes] = response.stream.__aiter__()
    decoder = content_decoder(response)
    return raw if decoder is None else _Decoded(raw.__anext__, decoder)


def sync_decoded_chunks(response: Any) -> Iterator[bytes]:
    """The decoded chunks of a sync response's body."""
    raw: Iterator[bytes] = iter(response.stream)
    decoder = content_decoder(response)
    return raw if decoder is None else _SyncDecoded(raw, decoder)
