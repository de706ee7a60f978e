"""The parts of a ``Format`` that say more than one value: resuming by a cursor, the prefill rule, the SDK's
side, the request ``streamfsm probe`` sends, and the test kit's builders (named, loaded when asked: the kit
lives in a room above the wire).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ._adapters import Adapter
from ._adapters._resume import ResumeRefusal
from ._adapters._sdk_items import SdkTranslator

__all__ = ["KitName", "Prefill", "Probe", "Resume", "SdkSide"]


@dataclass(frozen=True, slots=True)
class Resume:
    """Re-attaching to a stream by the provider's own cursor (see ``_adapters/_resume.py``).

    * ``asked(body)``: whether a request makes its stream resumable (stored by the provider);
      ``request``: what a request adds to make it so;
    * ``url(base_url, response_id, starting_after)``: the request that streams the rest;
    * ``cursor(adapter)``: (response id, last sequence number) the stream's adapter saw, None before both;
    * ``resumed(adapter)``: a fresh adapter that decodes the rest where the failed one stopped;
    * ``refusal_of(status, body)``: what an error answer to the resume means, and the evidence.
    """

    asked: Callable[[Mapping[str, Any]], bool]
    request: Mapping[str, Any]
    url: Callable[[str, str, int], str]
    cursor: Callable[[Adapter], tuple[str, int] | None]
    resumed: Callable[[Adapter], Adapter]
    refusal_of: Callable[[int, bytes], tuple[ResumeRefusal, str]]


def _never_blocked(body: Mapping[str, Any]) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Prefill:
    """The format's rule for a continuation in the prefill style: ``blocked(body)``, a request the provider
    never takes a prefill with (it is sent as an instruction instead); ``trims_whitespace``, the rewrite
    drops the delivered text's trailing whitespace (the provider rejects a prefill ending in it)."""

    blocked: Callable[[Mapping[str, Any]], bool] = _never_blocked
    trims_whitespace: bool = False


@dataclass(frozen=True, slots=True)
class SdkSide:
    """How ``wrap()`` knows a stream of the format from its SDK, and reads its items.

    * ``package``: the SDK's top-level module (classes are recognised by name: the SDK is never imported);
    * ``translator``: the SDK items → events (the wire adapter, fed items by attribute access);
    * ``modules``: prefixes of the modules whose classes mean this format (a stream's cast type, an item's
      class, the coroutine of an un-awaited call);
    * ``sole``: every stream of ``package`` is this format;
    * ``operation``: the operation name a stream of ``package`` carries for this format (botocore's);
    * ``item(item)``: whether an item of no known class is one of this format (read by its fields).
    """

    package: str
    translator: type[SdkTranslator]
    modules: tuple[str, ...] = ()
    sole: bool = False
    operation: str | None = None
    item: Callable[[Any], bool] | None = None


def _tools_listed(tools: list[Any]) -> dict[str, Any]:
    return {"tools": tools}


@dataclass(frozen=True, slots=True)
class Probe:
    """The smallest request of the format, as ``streamfsm probe`` sends it: ``body(model, prompt)``, where a
    list of tools goes (``tools(tools)``: the keys added to the body), whether the request is signed with
    AWS SigV4 instead of carrying a key, and the whole answer's path where it differs from the streaming
    one (``whole_path``: the streaming URL's ending and the whole answer's; else the body's flag says it)."""

    body: Callable[[str, str], dict[str, Any]]
    tools: Callable[[list[Any]], dict[str, Any]] = _tools_listed
    signed: bool = False
    whole_path: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class KitName:
    """Where the test kit's builders for the format live (``module``, ``name``): loaded when the kit asks,
    since ``streamfsm.testing`` is a room above the wire."""

    module: str
    name: str

    def load(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)
