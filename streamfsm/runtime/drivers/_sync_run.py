"""A sync run: ``with run: for event in run: ...``, over blocking reads (``ThreadReads``).

The sync counterpart of ``Run``'s lifecycle and iteration, for any sync source (``SyncSdkRun``'s SDK
stream, ``SyncHttpRun``'s httpx client): no event loop, so nothing is a cancellation, and ``abort()`` may
come from another thread. A subclass connects (``_connect_sync``: on success the core has the headers and
``_iterator`` the body's chunks or items) and closes (``_close_sync``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Final, TypeVar

from ...classify import AbortSource
from ...machine import Trigger
from ...wire import ConsumerEvent
from ._handle import ConsumerRun
from ._sync_reads import ThreadReads

__all__ = ["SyncRun"]

_log: Final = logging.getLogger("streamfsm")
_S = TypeVar("_S", bound="SyncRun")


class SyncRun(ConsumerRun):
    """A run read by blocking reads; see the module docstring."""

    _reads: ThreadReads
    _block = "with"
    _iterator: Iterator[Any]

    def _reader(self) -> ThreadReads:
        return ThreadReads(self._core)

    def _connect_sync(self) -> None:
        raise NotImplementedError

    def _close_sync(self) -> None:
        return None

    def _wake(self) -> None:
        """``abort()`` while connecting: end the wait (a driver that connects on a helper thread)."""

    # -- lifecycle --------------------------------------------------------------------------------------

    def __enter__(self: _S) -> _S:
        if self._entered:
            raise RuntimeError("a run can be entered only once; open a new stream for a new attempt")
        self._entered = True
        try:
            if self._core.abort_request is not None:  # aborted before it started: send nothing
                raise self._core.timed_out(Trigger.LOCAL_ABORT)
            self._connect_sync()
        except BaseException as exc:
            if not self._core.done:
                self._core.local_end(exc)  # no event loop here: nothing is a cancellation
            self._cleanup_sync()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if not self._core.done:
                self._core.local_end(exc)
            self._seal()
        finally:
            self._cleanup_sync()

    _what = "this run is a sync one"  # what the refusal of async use says the run is

    async def __aenter__(self) -> Any:
        raise TypeError(f"{self._what}: use `with` and `for`, not `async with`")

    async def __aexit__(self, *exc_info: object) -> None:
        return None  # never entered: __aenter__ refused

    def __aiter__(self) -> Any:
        raise TypeError(f"{self._what}: iterate it with `for`")

    def _cleanup_sync(self) -> None:
        try:
            self._close_sync()
        except Exception as exc:  # the class only: a message may quote data
            _log.warning("closing the stream's source failed (%s)", type(exc).__name__)
        finally:
            self._reads.forget()
            self._emit()

    # -- streaming --------------------------------------------------------------------------------------

    def __iter__(self: _S) -> _S:
        return self

    def __next__(self) -> ConsumerEvent:
        pending = self._pending
        core = self._core
        while not pending:
            if self._over():
                raise StopIteration
            self._took(core.took(self._reads.read(self._iterator)))
        return pending.popleft()

    def abort(self, reason: str | None = None, *, source: AbortSource | str = AbortSource.USER) -> None:
        """Stop the stream now, also from another thread; the run fails as ``local_abort``."""
        if self._core.abort(reason, source):
            self._wake()
            self._reads.interrupt()
