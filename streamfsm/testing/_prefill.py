"""The fault provider as today's Anthropic models: no assistant prefill.

Anthropic's current models (Claude 4.6 and later) refuse a conversation that ends with an assistant message
(anthropics/claude-code#52433, vercel/ai#12296, langchain-ai/deepagents#1585)::

    HTTP 400  {"type": "error", "error": {"type": "invalid_request_error", "message": "This model does not
              support assistant message prefill. The conversation must end with a user message."},
              "request_id": "req_..."}

`RefusesPrefill` wraps any `FaultServer` router: a request whose conversation ends with the assistant's turn
gets that answer, any other goes to the router it wraps::

    async with FaultServer(RefusesPrefill(route)) as server: ...
"""

from __future__ import annotations

import json
import threading
from typing import Any, Final

from ._script import Scenario, Script, Status
from ._server import Request, Router

__all__ = ["PREFILL_REFUSAL", "RefusesPrefill", "ends_with_assistant"]

PREFILL_REFUSAL: Final = json.dumps(
    {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "This model does not support assistant message prefill. "
            "The conversation must end with a user message.",
        },
        "request_id": "req_011CfaultPrefill",
    }
).encode()
"""The body Anthropic's current models answer a prefill with (status 400)."""

_JSON: Final = (("content-type", "application/json"), ("x-should-retry", "false"))
_ASSISTANT: Final = ("assistant", "model")  # Gemini names the assistant's turn "model"


def ends_with_assistant(body: bytes) -> bool:
    """Whether a request body's conversation (``messages``, ``contents`` or a Responses ``input`` list) ends
    with the assistant's turn."""
    try:
        payload: Any = json.loads(body or b"{}")
    except ValueError:
        return False
    if not isinstance(payload, dict):
        return False
    lists = (payload[key] for key in ("messages", "contents", "input") if isinstance(payload.get(key), list))
    turns: list[Any] = next(lists, [])
    return bool(turns) and isinstance(turns[-1], dict) and turns[-1].get("role") in _ASSISTANT


class RefusesPrefill:
    """A router that refuses an assistant prefill as Anthropic's current models do (400, `PREFILL_REFUSAL`)
    and hands every other request to ``router``. ``refused`` counts the refusals (safe to read from the
    test's thread)."""

    def __init__(self, router: Router) -> None:
        self.router = router
        self.refused = 0
        self._lock = threading.Lock()

    def __call__(self, request: Request) -> Script | Scenario:
        if ends_with_assistant(request.body):
            with self._lock:
                self.refused += 1
            return (Status(400, _JSON, PREFILL_REFUSAL),)
        return self.router(request) if callable(self.router) else self.router
