"""pydantic-ai's ``FallbackModel`` moves to the next model when ``fallback_on`` says so; this handler says so
from the machine's verdict::

    from pydantic_ai.models.fallback import FallbackModel
    from streamfsm.frameworks.pydantic_ai import fall_back_when_safe

    model = FallbackModel(primary, secondary, fallback_on=fall_back_when_safe)

where ``primary``'s provider holds an SDK client with a tapped HTTP client. A failure the tap diagnosed falls
back exactly when a new attempt is safe (``safe_auto_retry``: nothing shown, no effectful tool, a transient
fault), or when the provider refused the request for a reason another model may not have (rate limit,
quota, overload, server error, content filter, context overflow). Anything else is raised as it was. Where
the tap saw nothing, pydantic-ai's default holds: fall back on its ``ModelAPIError``.
"""

from __future__ import annotations

from pydantic_ai.exceptions import ModelAPIError

from ..classify import ProviderErrorKind, Verdict
from ..machine import Commitment
from ..tap import failure_of

__all__ = ["fall_back_when_safe"]

# Refusals that say nothing about the request itself: another model (or provider) may well serve it.
_ANOTHER_MODEL_MAY: frozenset[str] = frozenset(
    kind.value
    for kind in (
        ProviderErrorKind.RATE_LIMIT,
        ProviderErrorKind.QUOTA_EXHAUSTED,
        ProviderErrorKind.OVERLOADED,
        ProviderErrorKind.SERVER_ERROR,
        ProviderErrorKind.CONTENT_FILTER,
        ProviderErrorKind.CONTEXT_OVERFLOW,
        ProviderErrorKind.NOT_FOUND,
    )
)


def fall_back_when_safe(exc: Exception) -> bool:
    """``fallback_on`` for ``FallbackModel``: fall back where the machine says another attempt is safe."""
    failure = failure_of(exc)
    if failure is None:
        return isinstance(exc, ModelAPIError)
    diagnosis = failure.diagnosis
    if diagnosis.verdict is Verdict.SAFE_AUTO_RETRY:
        return True
    nothing_shown = diagnosis.state.commitment is Commitment.NONE
    return nothing_shown and diagnosis.cause in _ANOTHER_MODEL_MAY
