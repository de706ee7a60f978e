"""What each format decides about every member its provider defines (DESIGN §13.1).

A provider's official SDK ships typed models of its wire: the stream events, the content parts or blocks,
the tool kinds and the finish reasons. Each format keeps a decision per member, with where the provider
defines it:

* ``READ``: the adapter reads it and it drives the machine (text, a tool call, a finish, an error);
* ``INFORMATIONAL``: counted in the record, harmless (bookkeeping, a hosted tool's progress);
* ``NOT_UNDERSTOOD``: known to exist, not read: evidence (``unread_content``), never silently a whole answer.

A test walks the installed SDKs' definitions and fails, naming the member, when one has no decision here;
a new SDK release that adds an event is then a failing test, not silence. The tables are data: the docs'
format pages are generated from them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final


class Decision(enum.Enum):
    READ = "read"
    INFORMATIONAL = "informational"
    NOT_UNDERSTOOD = "not_understood"


@dataclass(frozen=True, slots=True)
class Decided:
    """One member's decision: what the adapter does with it, and where the provider defines it."""

    decision: Decision
    source: str
    means: str = ""  # in words, for the docs: what reading it does, or why it is harmless or not read


def read(source: str, means: str = "") -> Decided:
    return Decided(Decision.READ, source, means)


def informational(source: str, means: str = "") -> Decided:
    return Decided(Decision.INFORMATIONAL, source, means)


def not_understood(source: str, means: str = "") -> Decided:
    return Decided(Decision.NOT_UNDERSTOOD, source, means)


Table = Mapping[str, Decided]
_EMPTY: Final[Table] = MappingProxyType({})


def _empty() -> Table:
    return _EMPTY


@dataclass(frozen=True, slots=True)
class Definitions:
    """A format's decisions, by kind of member: the wire names as the provider sends them."""

    events: Table = field(default_factory=_empty)  # stream event types (chunk fields where untyped)
    content: Table = field(default_factory=_empty)  # content part / block / part-field kinds
    tools: Table = field(default_factory=_empty)  # tool call kinds (function, custom, hosted ...)
    finishes: Table = field(default_factory=_empty)  # finish / stop reasons and terminal statuses

    def tables(self) -> Mapping[str, Table]:
        return {
            "events": self.events,
            "content": self.content,
            "tools": self.tools,
            "finishes": self.finishes,
        }


NO_DEFINITIONS: Final = Definitions()


def undecided(members: Iterable[str], table: Table) -> list[str]:
    """The members a provider defines that ``table`` has no decision for, sorted (what a walk test names)."""
    return sorted({member for member in members if member not in table})
