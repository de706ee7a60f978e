"""The OpenAI Agents SDK asks its ``Model`` for retry advice after a failed request, with a replay-safety
field; this answers it from the machine's verdict instead of the exception's type::

    from streamfsm.frameworks.openai_agents import with_verdicts

    client = AsyncOpenAI(http_client=streamfsm.async_http_client())
    model = with_verdicts(OpenAIChatCompletionsModel(model="gpt-4.1", openai_client=client))

``safe_auto_retry`` (nothing shown, no effectful tool, a transient fault) is advised as a safe replay,
``retry_after_s`` included; anything else is advised against, and a failure after visible output or a side
effect is marked replay-unsafe, which the SDK never overrides for a stream. The runner still needs a retry
policy (``ModelSettings(retry=...)``) to retry at all, and refuses any retry once a stream event other than
``response.created`` / ``in_progress`` reached the consumer, whatever the advice: a safe cut after that (a
tool call cut mid-arguments) is raised, for the loop around the run to retry from
``result.to_input_list()`` (the tools that ran keep their results; the transparent-mode guide shows it). The
Responses websocket transport bypasses HTTP, so the tap (and this advice) cannot see it: use the HTTP
transport.
"""

from __future__ import annotations

from typing import Any

from agents.retry import ModelRetryAdvice, ModelRetryAdviceRequest

from ..classify import Verdict
from ..machine import Commitment
from ..tap import failure_of

__all__ = ["advice_for", "with_verdicts"]


def advice_for(request: ModelRetryAdviceRequest, fallback: Any = None) -> ModelRetryAdvice | None:
    """The machine's advice for ``request.error``; ``fallback(request)`` where the tap saw no failure."""
    failure = failure_of(request.error)
    if failure is None:
        return fallback(request) if fallback is not None else None
    diagnosis = failure.diagnosis
    committed = diagnosis.state.commitment is not Commitment.NONE
    safe = diagnosis.verdict is Verdict.SAFE_AUTO_RETRY
    return ModelRetryAdvice(
        suggested=safe,
        retry_after=diagnosis.retry_after_s,
        replay_safety="safe" if safe else ("unsafe" if committed else None),
        reason=f"{diagnosis.summary_key}: {diagnosis.title}",
        response_started=committed,
    )


def with_verdicts(model: Any) -> Any:
    """``model`` (any Agents SDK ``Model``), its retry advice answered by the machine; returned for chaining.
    The model object and its class stay the same, so the runner treats it as before."""
    own = model.get_retry_advice

    def get_retry_advice(request: ModelRetryAdviceRequest) -> ModelRetryAdvice | None:
        return advice_for(request, own)

    model.get_retry_advice = get_retry_advice
    return model
