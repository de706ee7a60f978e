"""The exceptions a caller of the runtime sees.

    StreamError
    └── StreamFailed        a run ended in ``failed``; carries ``.diagnosis`` and ``.record``

Raw transport exceptions never escape a run: they are the ``__cause__`` of a ``StreamFailed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..classify import Diagnosis
    from ._record import RunRecord


class StreamError(Exception):
    """Base of every error the runtime raises."""


class StreamFailed(StreamError):
    """A run failed. ``str()`` is the plain-language summary; the raw cause is ``__cause__``."""

    def __init__(self, diagnosis: Diagnosis, record: RunRecord) -> None:
        self.diagnosis = diagnosis
        self.record = record
        # Most details open with the title's words; say them once.
        detail = diagnosis.detail
        super().__init__(detail if detail.startswith(diagnosis.title) else f"{diagnosis.title}. {detail}")

    def __repr__(self) -> str:
        return f"StreamFailed({self.diagnosis.summary_key!r}, verdict={self.diagnosis.verdict.value!r})"
