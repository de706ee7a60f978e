"""pydantic-ai's ``FallbackModel`` moves to the next model when ``fallback_on`` says so; this handler says so
from the machine's verdict::

    from pydantic_ai.models.fallback import FallbackModel
    from streamfsm.frameworks.pydantic_ai import fall_back_when_safe

    model = FallbackModel(primary, secondary, fallback_on=fall_back_when_safe)

where ``primary``'s provider holds an SDK client with a tapped HTTP client. A failure the tap diagnosed falls
back exactly when nothing escaped yet (no visible output, no side effect), whatever the fault: another model
or provider may serve the request, and nothing would be shown twice. A local abort (the user stopped, the
task was cancelled) never falls back. pydantic-ai's own exceptions are traced to the stream behind them too
(an ``UnexpectedModelBehavior`` after a stream that ended quietly: ``failure_of``). Where the tap saw
nothing, pydantic-ai's default holds: fall back on its ``ModelAPIError``. ``FallbackModel`` is asked only
about a failure before a stream's first event; a later one (a tool call cut mid-arguments, ``safe_auto_retry``
all the same) is raised, for the loop around the run to retry from the messages ``capture_run_messages()``
caught, less the cut response (the transparent-mode guide shows it).
"""

from __future__ import annotations

from pydantic_ai.exceptions import ModelAPIError

from ..classify import FailureClass
from ..machine import Commitment
from ..tap import failure_of

__all__ = ["fall_back_when_safe"]

_OURS = frozenset({FailureClass.LOCAL_ABORT, FailureClass.CONSUMER_ERROR})


def fall_back_when_safe(exc: Exception) -> bool:
    """``fallback_on`` for ``FallbackModel``: fall back while nothing of the answer has escaped."""
    failure = failure_of(exc)
    if failure is None:
        return isinstance(exc, ModelAPIError)
    diagnosis = failure.diagnosis
    return diagnosis.failure_class not in _OURS and diagnosis.state.commitment is Commitment.NONE
