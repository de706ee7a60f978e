"""What the test kit knows of one format, as one object: ``FormatKit``. Each registered ``Format`` names its
kit (``Format.kit``); the kits are made in one place, ``_kits.py``, and found through the registry."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..wire import format_named

__all__ = ["FormatKit", "kit_of", "meaning_of"]


@dataclass(frozen=True, slots=True)
class FormatKit:
    """The test kit's builders for one format.

    * ``stream(parts, *, usage, finish, parallel, reasoning_key, background, generate)``: a whole stream
      of ``parts`` as the frames the provider sends (see ``_wire.build``);
    * ``keepalive``: the frame the format keeps a connection warm with;
    * ``error(kind, shape, sequence_number)``: one in-band error frame (None: the format's errors are not
      streamed frames the kit builds);
    * ``answer(text, tools, finish, usage)``: one whole non-streaming answer (None: the kit builds none);
      ``finish``/``tool_finish``: the finish reasons a whole answer ends with, without and with tool calls;
    * ``model``/``response_id``: what the kit's streams name (None: they name none);
    * ``body``: the smallest request the harness sends (the fault server ignores it);
    * ``harness_sdk``: the SDK whose client the harness plays the format through (None: it has no SDK
      path); ``sdk_call(client, body, streaming, generate)``: that SDK's call for the format, not awaited;
      ``shows_text(item)``: whether one of that SDK's items carries visible text;
    * ``meaning(frame)``: what one frame means to the property oracle (``_meanings.py``; None: the oracle
      does not read the format);
    * ``error_shapes``: the shapes of in-band error the format's streams have (``error(kind, shape, ...)``).
    """

    stream: Callable[..., list[bytes]]
    keepalive: bytes
    error: Callable[[Any, Any, int | None], bytes] | None = None
    answer: Callable[[str, Sequence[tuple[str, str]], str, bool], bytes] | None = None
    finish: str | None = None
    tool_finish: str | None = None
    model: str | None = None
    response_id: str | None = None
    body: Mapping[str, Any] = field(default_factory=dict)
    harness_sdk: str | None = None
    sdk_call: Callable[[Any, dict[str, Any], bool, bool], Any] | None = None
    shows_text: Callable[[Any], bool] | None = None
    meaning: Callable[[bytes], list[str]] | None = None
    error_shapes: tuple[str, ...] = ("nested",)


@cache
def kit_of(fmt: str) -> FormatKit:
    """The test kit's builders for format ``fmt`` (one of the registered formats)."""
    kit = format_named(fmt).kit.load()
    if not isinstance(kit, FormatKit):
        raise TypeError(f"format {fmt!r} names no FormatKit for the test kit")
    return kit


def meaning_of(fmt: str, frame: bytes) -> list[str]:
    """What one frame of format ``fmt`` means to the property oracle."""
    meaning = kit_of(fmt).meaning
    if meaning is None:
        raise ValueError(f"the property oracle does not read format {fmt!r}")
    return meaning(frame)
