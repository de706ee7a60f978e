"""Hand the machine's verdict to agent frameworks that decide retries themselves, one small module each,
imported only when used (each imports its framework):

* ``streamfsm.frameworks.openai_agents``: ``with_verdicts(model)`` answers the OpenAI Agents SDK's
  ``get_retry_advice`` from the tap's diagnosis;
* ``streamfsm.frameworks.pydantic_ai``: ``fall_back_when_safe``, a ``FallbackModel(fallback_on=...)``
  handler that falls back only while nothing of the answer has escaped.

Both read the diagnosis the transport tap attached (``streamfsm.failure_of``): give the framework's SDK client
a tapped HTTP client first. Where the tap saw no failure, the framework's own logic decides as before.
"""
