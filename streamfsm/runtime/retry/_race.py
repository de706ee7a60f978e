"""A race of two attempts for the first token (`Route.race`): the running attempt read alone until its
route's deadline, then beside a rival on another route; the first to yield an event goes on. Async only (the
sync form does not race); the retry executor (``_retry``) opens the rival and links the loser."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

import anyio

from ...classify import AbortSource
from ...wire import ConsumerEvent
from ..core._errors import StreamFailed
from ..drivers._stream import Run

__all__ = ["LOST", "first_to_answer", "read"]

LOST: Final = "another route's attempt answered first"


async def read(step: Awaitable[ConsumerEvent]) -> object:
    """One read of an attempt: its event, or how it ended (its clean end, its failure)."""
    try:
        return await step
    except (StopAsyncIteration, StreamFailed) as end:
        return end.with_traceback(None)  # its frames would hold the reader's, and they it: a cycle


async def first_to_answer(
    runs: list[Run],
    outcomes: dict[str, object],
    wait_s: float,
    open_rival: Callable[[Run], Awaitable[Run | None]],
) -> Run:
    """A race: ``runs[0]`` read alone for ``wait_s``, then beside its rival (``open_rival``, appended to
    ``runs`` once open); each read's outcome lands in ``outcomes``. Returns the run that goes on: the first
    to yield an event or end, a failure winning nothing while the other reads on; the other is stopped."""
    send, receive = anyio.create_memory_object_stream[Run](2)

    async def reading(run: Run) -> None:
        outcomes[run.run_id] = await read(run.__anext__())
        await send.send(run)

    async with send, receive, anyio.create_task_group() as group:
        group.start_soon(reading, runs[0])
        ended: Run | None = None
        with anyio.move_on_after(max(0.0, wait_s)):
            ended = await receive.receive()
        if ended is None:
            rival = await open_rival(runs[0])
            if rival is not None:
                runs.append(rival)
                group.start_soon(reading, rival)
            ended = await receive.receive()
        if len(runs) == 2 and isinstance(outcomes[ended.run_id], StreamFailed):
            ended = await receive.receive()  # a failure wins nothing: the other goes on
        for run in runs:
            if run is not ended and run.run_id not in outcomes:
                run.abort(LOST, source=AbortSource.APP)
    assert ended is not None
    return ended
