"""Pure classification: exception chains and provider errors become facts; (state, edge, facts) becomes a
diagnosis with a verdict and plain words. No IO here, and nothing imports ``httpx`` or ``anyio``."""

from ._diagnose import diagnose, diagnose_finished, failure_class
from ._finish import NOT_WHOLE, finish_cause, finish_error, is_whole
from ._summaries import CLASS_MEANING, FINISHED_SAYS, PROVIDER_SAID, WHAT_HAPPENED, what_happened
from ._taxonomy import (
    AbortSource,
    Action,
    Confidence,
    Diagnosis,
    Facts,
    FailureClass,
    FinishCause,
    Phase,
    ProviderError,
    ProviderErrorKind,
    TransportFacts,
    TransportKind,
    Verdict,
)

__all__ = [
    "CLASS_MEANING",
    "FINISHED_SAYS",
    "NOT_WHOLE",
    "PROVIDER_SAID",
    "WHAT_HAPPENED",
    "AbortSource",
    "Action",
    "Confidence",
    "Diagnosis",
    "Facts",
    "FailureClass",
    "FinishCause",
    "Phase",
    "ProviderError",
    "ProviderErrorKind",
    "TransportFacts",
    "TransportKind",
    "Verdict",
    "diagnose",
    "diagnose_finished",
    "failure_class",
    "finish_cause",
    "finish_error",
    "is_whole",
    "what_happened",
]
