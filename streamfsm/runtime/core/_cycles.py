"""Breaking the reference cycles a transport exception closes through its own traceback, so that a failed
run is freed by reference counting on CPython 3.12+ as before.

Since 3.12 a finished generator or coroutine frame keeps its caller as ``f_back`` (3.11 dropped it). That
closes cycles in our dependencies: ``@contextmanager.__exit__`` holds, as ``value``, the exception whose
traceback holds the generator's frame, whose ``f_back`` is that ``__exit__`` (CPython gh-129280; httpcore's
and httpx's ``map_exceptions``); and from a cycle that existed already (h11 raising ``self``) the ``f_back``
chain now reaches every frame the call went through, ours among them: their ``self`` is the run.
"""

from __future__ import annotations

import contextlib
import sys
import types


def release_traceback_cycles(exc: BaseException) -> None:
    """Clear the finished frames, in the tracebacks of ``exc`` and of the exceptions it was raised from or
    during, that hold one of those exceptions in a local: those locals close the cycles, and a printed
    traceback needs none of them (only code and line numbers)."""
    if sys.version_info < (3, 12):  # no f_back from a finished generator: the cycles reach nothing of ours
        return
    chain: dict[int, BaseException] = {}
    pending = [exc]
    while pending:
        current = pending.pop()
        if id(current) not in chain:
            chain[id(current)] = current
            pending += (e for e in (current.__cause__, current.__context__) if e is not None)
            grouped = getattr(current, "exceptions", None)  # an exception group
            if isinstance(grouped, tuple):
                pending += (e for e in grouped if isinstance(e, BaseException))
    running: set[int] = set()  # this thread's frames: still running, and a 3.12 f_locals would copy them
    caller: types.FrameType | None = sys._getframe()
    while caller is not None:
        running.add(id(caller))
        caller = caller.f_back
    for current in chain.values():
        tb: types.TracebackType | None = current.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            if id(frame) not in running and any(id(value) in chain for value in frame.f_locals.values()):
                with contextlib.suppress(RuntimeError):  # a suspended frame: not ours to end
                    frame.clear()
            tb = tb.tb_next
