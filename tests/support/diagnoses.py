"""A `Diagnosis` of a given class and cause, for the tests of what is done after a failure (routes, the
recovery guide's table): only the fields those decisions read vary."""

from __future__ import annotations

from streamfsm.classify import Action, Diagnosis, FailureClass, Phase, Verdict
from streamfsm.machine import Activity, Commitment, State


def diagnosis(
    klass: FailureClass,
    cause: str,
    *,
    verdict: Verdict = Verdict.SAFE_AUTO_RETRY,
    retry_after_s: float | None = None,
    delivered: bool = True,
) -> Diagnosis:
    """``delivered``: the request may have reached the provider (``possibly_delivered``)."""
    return Diagnosis(
        state=State(Activity.CONNECTING, Commitment.NONE),
        edge=None,
        phase=Phase.EARLY_STREAM,
        cause=cause,
        failure_class=klass,
        summary_key=f"{klass.value}.{cause}",
        verdict=verdict,
        reason="test",
        action=Action.RETRY,
        title="test",
        detail="test",
        retry_after_s=retry_after_s,
        possibly_delivered=delivered,
    )
