"""The recorded payloads every section replays: generated, realistic, identical for every contender.

A payload is one whole streamed response as the provider's bytes (``streamfsm.testing.build``: ids,
``created``, ``model``, fingerprints, the bookkeeping events, the usage chunk, the terminal event), made of
reasoning deltas, thousands of one-to-three-word text deltas, and one tool call whose arguments arrive in
12-character fragments. Generation is seeded, so every run replays the same bytes.

Two ways to cut the bytes into reads (``chunking``):

* ``live``: one SSE event per read, which is what a socket delivers while the model is generating and the
  consumer keeps up (each token is flushed on its own). The per-read costs (event-loop wake-up, httpx's
  iterator layers, our per-read watchdog scope) are paid once per event: the worst case for overhead.
* ``bulk``: random reads of 64 B to 16 KiB (seeded), as when the consumer falls behind or a proxy buffers;
  per-read costs are amortised over many events.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Final, Literal

from streamfsm.testing import build

from .sse import WORDS, split

Chunking = Literal["live", "bulk"]
CHUNKINGS: Final[tuple[Chunking, ...]] = ("live", "bulk")
SEED: Final = 7

CHAT_BODY: Final = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
    "stream": True,
}
ANTHROPIC_BODY: Final = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 4096,
    "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
    "stream": True,
}
BODIES: Final = {"openai-chat": CHAT_BODY, "anthropic": ANTHROPIC_BODY}


@dataclass(frozen=True, slots=True)
class Payload:
    fmt: str
    frames: tuple[bytes, ...]  # one SSE event each
    data_events: int  # SSE events with a data line (what the floor parses)
    deltas: int  # reasoning + text + tool-argument deltas

    @property
    def body(self) -> bytes:
        return b"".join(self.frames)

    @property
    def size(self) -> int:
        return sum(map(len, self.frames))

    def chunks(self, chunking: Chunking, seed: int = SEED) -> list[bytes]:
        if chunking == "live":
            return list(self.frames)
        return split(self.body, random.Random(seed))


def _words(rng: random.Random) -> str:
    return " " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))


def _arguments(rng: random.Random, size: int) -> str:
    days = []
    while len(json.dumps(days)) < size:
        days.append({"day": len(days), "unit": rng.choice(("celsius", "fahrenheit")), "hourly": True})
    return json.dumps({"city": "Paris", "country": "FR", "days": days}, separators=(",", ":"))


def make(
    fmt: str, *, text: int = 2000, reasoning: int = 200, tool_args: int = 480, seed: int = SEED
) -> Payload:
    """``reasoning`` reasoning deltas, ``text`` text deltas, one tool call of about ``tool_args`` characters
    of arguments (40 fragments at the default), usage, and the terminal event."""
    rng = random.Random(seed)
    parts: list[tuple[str, ...]] = [("reasoning", _words(rng)) for _ in range(reasoning)]
    parts += [("text", _words(rng)) for _ in range(text)]
    if tool_args:
        parts.append(("tool", "get_weather", _arguments(rng, tool_args)))
    frames = tuple(build(fmt, parts))  # type: ignore[arg-type]
    data_events = sum(1 for f in frames if b"\ndata:" in f or f.startswith(b"data:"))
    fragments = -(-len(parts[-1][2]) // 12) if tool_args else 0
    return Payload(fmt, frames, data_events, reasoning + text + fragments)
