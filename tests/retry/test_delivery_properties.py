"""Properties of holding back (``_delivery.Delivery``, no I/O): over random attempts of random events, each
ending in another attempt, a stop or success, the consumer gets an attempt's events only once it commits
(its first text, tool call or finish, or past the hold limit), in order and once each, all of them when the
chain ends at that attempt, none of an attempt that was retried before it committed; and ``partial`` is the
text it was given."""

from __future__ import annotations

import itertools
from typing import Literal

from hypothesis import given
from hypothesis import strategies as st

from streamfsm.runtime.retry._delivery import Delivery
from streamfsm.wire import (
    ConsumerEvent,
    Finish,
    FinishReason,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolInputStart,
)

Kind = Literal["reasoning", "input", "text", "call", "finish"]
End = Literal["retry", "stop", "complete"]
COMMITS = (TextDelta, ToolCall, Finish)

attempts = st.lists(
    st.tuples(
        st.lists(st.sampled_from(("reasoning", "input", "reasoning", "text", "call", "finish")), max_size=8),
        st.sampled_from(("retry", "stop", "complete")),
    ),
    min_size=1,
    max_size=5,
)


def _event(kind: Kind, n: int) -> ConsumerEvent:
    """A distinct event of ``kind`` (its text or id says which, so equal means the same)."""
    if kind == "reasoning":
        return ReasoningDelta(f"r{n}")
    if kind == "input":
        return ToolInputStart(f"c{n}", "read_file")
    if kind == "text":
        return TextDelta(f"t{n}")
    if kind == "call":
        return ToolCall(f"c{n}", "read_file", "{}")
    return Finish(FinishReason.STOP, f"f{n}")


@given(attempts, st.integers(1, 6))
def test_an_attempt_reaches_the_consumer_only_once_committed_and_whole_when_the_chain_ends(
    plan: list[tuple[list[Kind], End]], max_held: int
) -> None:
    delivery = Delivery(max_held)
    numbers = itertools.count()
    given_text: list[str] = []  # what the consumer was given of the answer, as the test sees it
    for attempt, (kinds, end) in enumerate(plan, start=1):
        delivery.opened(attempt, resumed=False)
        before = len(delivery.out)
        taken: list[ConsumerEvent] = []
        committed = False
        for kind in kinds:
            event = _event(kind, next(numbers))
            delivery.take(event)
            taken.append(event)
            committed = committed or isinstance(event, COMMITS) or len(taken) > max_held
            shown = list(delivery.out)[before:]
            if committed:
                assert shown == taken, "a committed attempt's events, in order, once each"
                assert delivery.exposed is not None
            else:
                assert shown == [], "an event of an attempt that has not committed reached the consumer"
        if end == "retry" and not committed:
            continue  # the next attempt opens: what was held is dropped
        if end == "complete":
            delivery.release()
        else:
            delivery.flush()  # the chain ends here, or the attempt was exposed (a retry would ask)
        assert list(delivery.out)[before:] == taken, (
            "the attempt the chain ends at reaches the consumer whole"
        )
        given_text += [e.text for e in taken if isinstance(e, TextDelta)]
        if end != "retry":
            break
    assert delivery.partial.text == "".join(given_text)
    assert len(set(map(id, delivery.out))) == len(delivery.out)
