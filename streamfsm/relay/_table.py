"""The relay's route table (``streamfsm relay --routes FILE``): a model name (or ``*``, any other) to its
upstream routes in order, each with its own key. A JSON file (stdlib only, on every supported Python)::

    {
      "routes": {
        "openai": {"upstream": "https://api.openai.com", "key_env": "OPENAI_API_KEY", "first_token_s": 10},
        "azure": {"upstream": "https://example.openai.azure.com/openai", "key_file": "/run/secrets/azure",
                  "key_header": "api-key", "model": "gpt-4o-2024-08-06", "account": "azure"}
      },
      "models": {"gpt-4o": ["openai", "azure"], "*": ["openai"]},
      "breakers": {"threshold": 5, "cool_down_s": 30},
      "total_s": 30
    }

A key is never in the table: only the variable (``key_env``) or the file (``key_file``) that holds it, read
once at load. Every error names the file, the key and, where it can, the line.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx

from ..runtime import BREAKERS, Breakers, Ids, RetryPolicy, Route
from ..wire import FORMAT_NAMES, FORMATS

__all__ = ["ANY_MODEL", "RouteTable", "TableRoute"]

ANY_MODEL: Final = "*"
_ROUTE_KEYS: Final = frozenset(
    {
        "upstream",
        "format",
        "key_env",
        "key_file",
        "key_header",
        "model",
        "tries",
        "account",
        "context_window",
        "first_token_s",
    }
)
_TOP_KEYS: Final = frozenset({"routes", "models", "breakers", "total_s"})
_BREAKER_KEYS: Final = frozenset({"threshold", "cool_down_s", "retry_cap", "window_s", "min_spacing_s"})
# The headers that carry a client's own key: dropped when the route sends its own.
CLIENT_KEY_HEADERS: Final = frozenset({b"authorization", b"x-api-key", b"api-key", b"x-goog-api-key"})
_MAX_KEY: Final = 4096


class TableError(ValueError):
    """The route table is not one the relay can use; the message names where."""


def _never(_: Ids) -> Any:
    raise TypeError("a relay route is opened by the relay, not called")


@dataclass(frozen=True, slots=True)
class TableRoute:
    """One route of the table: where its requests go (``upstream``, a base URL), in which format (None: the
    client's), the key it sends instead of the client's (never in a repr), the model name it sends instead
    of the client's (``model``), and the `Route` the routing step reads (tries, account, window, deadline)."""

    route: Route
    upstream: str
    format: str | None = None
    key: str | None = field(default=None, repr=False)
    key_header: str = "authorization"
    model: str | None = None
    base: httpx.URL = field(init=False, repr=False, compare=False)
    prefix: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        url = httpx.URL(self.upstream)
        object.__setattr__(self, "base", url.copy_with(raw_path=b"/"))
        object.__setattr__(self, "prefix", url.raw_path.rstrip(b"/"))

    @property
    def name(self) -> str:
        return self.route.name

    def url(self, target: bytes) -> httpx.URL:
        """The upstream URL of a request ``target`` (its path and query)."""
        return self.base.copy_with(raw_path=self.prefix + target)

    def headers(self, forwarded: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        """The headers that go to this route: the client's own key replaced by the route's, if it has one."""
        if self.key is None:
            return forwarded
        out = [(k, v) for k, v in forwarded if k.lower() not in CLIENT_KEY_HEADERS]
        value = f"Bearer {self.key}" if self.key_header == "authorization" else self.key
        out.append((self.key_header.encode("latin-1"), value.encode("latin-1")))
        return out

    def body(self, content: bytes) -> bytes:
        """The request body for this route: its ``model`` in place of the client's, when it names one."""
        if self.model is None:
            return content
        try:
            body = json.loads(content)
        except (ValueError, RecursionError):
            return content
        if not isinstance(body, dict) or body.get("model") == self.model:
            return content
        body["model"] = self.model
        return json.dumps(body, ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True, slots=True)
class RouteTable:
    """Models to their routes in order (``ANY_MODEL``: every model the table does not name); the circuit
    breakers the routes share (one per route name; the process's own, ``BREAKERS``, unless the table sets
    its own); ``total_s``: no attempt of one request starts later than this after its first."""

    models: Mapping[str, tuple[TableRoute, ...]]
    breakers: Breakers = field(default=BREAKERS, repr=False)
    total_s: float = 30.0
    source: str = "<table>"

    @property
    def routes(self) -> tuple[TableRoute, ...]:
        """Every route, once, in the order the table first names it."""
        seen: dict[str, TableRoute] = {}
        for routes in self.models.values():
            for route in routes:
                seen.setdefault(route.name, route)
        return tuple(seen.values())

    def for_model(self, model: object) -> tuple[TableRoute, ...] | None:
        """The routes of ``model`` (the request body's), else the table's ``*`` routes, else None."""
        if isinstance(model, str) and model in self.models:
            return self.models[model]
        return self.models.get(ANY_MODEL)

    def policy(self, routes: tuple[TableRoute, ...]) -> RetryPolicy:
        """The bounds of one request's attempts: each route's tries, within ``total_s``."""
        attempts = min(32, sum(route.route.tries for route in routes))
        return RetryPolicy(attempts, self.total_s, initial_delay_s=0.1, max_delay_s=2.0)

    @classmethod
    def load(cls, path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> RouteTable:
        """The table in the JSON file ``path``; its keys read from ``environ`` (default ``os.environ``) and
        the key files it names. Raises `TableError` naming the file and the key (and line) at fault."""
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TableError(f"{source}: cannot be read ({type(exc).__name__})") from None
        try:
            data = json.loads(text, object_pairs_hook=_unique)
        except json.JSONDecodeError as exc:
            raise TableError(f"{source}, line {exc.lineno} column {exc.colno}: not JSON: {exc.msg}") from None
        except _Duplicate as exc:
            line = _line(text, exc.key, 2)
            raise TableError(f"{source}, line {line}: {exc.key!r} is given twice") from None
        return cls.from_dict(data, source=source, environ=environ, text=text)

    @classmethod
    def from_dict(
        cls,
        data: object,
        *,
        source: str = "<table>",
        environ: Mapping[str, str] | None = None,
        text: str = "",
    ) -> RouteTable:
        """The table of ``data`` (the file's JSON object); see `load`."""
        env = os.environ if environ is None else environ

        def fail(where: str, why: str, near: str | None = None) -> TableError:
            line = _line(text, near) if near is not None else None
            return TableError(f"{source}{f', line {line}' if line else ''}: {where}: {why}")

        if not isinstance(data, dict):
            raise fail("the table", "must be a JSON object with 'routes' and 'models'")
        unknown = sorted(set(data) - _TOP_KEYS)
        if unknown:
            takes = ", ".join(sorted(_TOP_KEYS))
            raise fail(unknown[0], f"unknown key (the table takes {takes})", unknown[0])
        raw_routes, raw_models = data.get("routes"), data.get("models")
        if not isinstance(raw_routes, dict) or not raw_routes:
            raise fail("routes", "must be an object of routes by name", "routes")
        if not isinstance(raw_models, dict) or not raw_models:
            why = "must be an object: a model name (or '*') to a list of route names"
            raise fail("models", why, "models")
        routes = {name: _route(name, spec, env, fail) for name, spec in raw_routes.items()}
        models: dict[str, tuple[TableRoute, ...]] = {}
        for model, names in raw_models.items():
            where = f"models.{model}"
            if not model:
                raise fail(where, "a model name must not be empty", '""')
            if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
                raise fail(where, "must be a non-empty list of route names", model)
            if len(set(names)) != len(names):
                raise fail(where, "names a route twice", model)
            missing = [n for n in names if n not in routes]
            if missing:
                raise fail(where, f"names no route {missing[0]!r} (routes: {', '.join(routes)})", model)
            models[model] = tuple(routes[n] for n in names)
        total = data.get("total_s", 30.0)
        if not _positive(total):
            raise fail("total_s", f"must be a positive number of seconds, not {total!r}", "total_s")
        breakers = BREAKERS
        if "breakers" in data:
            settings = data["breakers"]
            if not isinstance(settings, dict):
                raise fail("breakers", "must be an object", "breakers")
            unknown = sorted(set(settings) - _BREAKER_KEYS)
            if unknown:
                raise fail(f"breakers.{unknown[0]}", f"unknown (takes {', '.join(sorted(_BREAKER_KEYS))})")
            try:
                breakers = Breakers(**settings)
            except (TypeError, ValueError) as exc:
                raise fail("breakers", str(exc), "breakers") from None
        return cls(models, breakers, float(total), source)


def _route(name: str, spec: object, env: Mapping[str, str], fail: Any) -> TableRoute:
    where = f"routes.{name}"
    if not isinstance(spec, dict):
        raise fail(where, "must be an object", name)
    if "key" in spec or "api_key" in spec:
        why = "a key is never written in the table: name its variable (key_env) or file (key_file)"
        raise fail(where, why, name)
    unknown = sorted(set(spec) - _ROUTE_KEYS)
    if unknown:
        raise fail(f"{where}.{unknown[0]}", f"unknown (a route takes {', '.join(sorted(_ROUTE_KEYS))})", name)
    upstream = spec.get("upstream")
    try:
        url = httpx.URL(upstream) if isinstance(upstream, str) else None
    except httpx.InvalidURL:
        url = None
    if (
        url is None
        or url.scheme not in ("http", "https")
        or not url.host
        or url.query
        or url.fragment
        or url.userinfo
    ):
        # Shown without what may hold a secret (credentials, a query): a key goes in key_env or key_file.
        shown = (
            "a URL"
            if url is None
            else f"{url.scheme}://{url.host}{'' if url.port is None else f':{url.port}'}"
        )
        why = f"must be an http:// or https:// URL without credentials, a query or a fragment, not {shown}"
        raise fail(f"{where}.upstream", why, name)
    fmt = spec.get("format")
    if fmt is not None and fmt not in FORMAT_NAMES:
        raise fail(f"{where}.format", f"must be one of {', '.join(FORMAT_NAMES)}, not {fmt!r}", name)
    model = spec.get("model")
    if model is not None and (not isinstance(model, str) or not model):
        raise fail(f"{where}.model", f"must be a model name, not {model!r}", name)
    key, source = _key(where, spec, env, fail)
    # The header a route's key goes in: its format's (``key_header`` names another); "authorization"
    # carries "Bearer KEY", any other header the key itself.
    known = FORMATS.get(str(fmt))
    header = spec.get("key_header", known.key_header if known is not None else "authorization")
    if not isinstance(header, str) or not header.isascii() or not header.replace("-", "").isalnum():
        raise fail(f"{where}.key_header", f"must be a header name, not {header!r}", name)
    account = spec.get("account")
    if account is not None and (not isinstance(account, str) or not account):
        raise fail(f"{where}.account", f"must be a name, not {account!r}", name)
    # Who pays: the account named, else the key's source, else the upstream host (the client's own key).
    payer = account or source or f"host:{url.host}"
    options = {k: spec[k] for k in ("tries", "context_window", "first_token_s") if k in spec}
    try:
        route = Route(name, _never, account=payer, provider=fmt, **options)
    except (TypeError, ValueError) as exc:
        raise fail(where, str(exc), name) from None
    return TableRoute(route, str(upstream), fmt, key, header.lower(), model)


def _key(
    where: str, spec: Mapping[str, Any], env: Mapping[str, str], fail: Any
) -> tuple[str | None, str | None]:
    """The route's key, read now, and where it came from (``env:NAME``, ``file:PATH``); never the key in
    an error."""
    variable, path = spec.get("key_env"), spec.get("key_file")
    if variable is not None and path is not None:
        raise fail(where, "give key_env or key_file, not both")
    if variable is not None:
        if not isinstance(variable, str) or not variable:
            raise fail(f"{where}.key_env", "must name an environment variable")
        key = env.get(variable) or None
        if key is None:
            raise fail(f"{where}.key_env", f"the variable {variable} is not set (it holds the route's key)")
        source = f"env:{variable}"
    elif path is not None:
        if not isinstance(path, str) or not path:
            raise fail(f"{where}.key_file", "must name a file")
        try:
            key = Path(path).read_text(encoding="utf-8").strip() or None
        except (OSError, UnicodeDecodeError) as exc:
            raise fail(f"{where}.key_file", f"{path} cannot be read ({type(exc).__name__})") from None
        if key is None:
            raise fail(f"{where}.key_file", f"{path} is empty")
        source = f"file:{path}"
    else:
        return None, None
    if len(key) > _MAX_KEY or not key.isascii() or not key.isprintable():
        raise fail(where, f"the key in {source[source.index(':') + 1 :]} is not one line of printable ASCII")
    return key, source


class _Duplicate(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def _line(text: str, key: str | None, nth: int = 1) -> int | None:
    """The line where ``key`` is written the ``nth`` time as a JSON string in ``text`` (a help for the
    reader: the first is most often the key itself)."""
    if not text or key is None:
        return None
    quoted = key if key.startswith('"') else json.dumps(key)
    at = -1
    for _ in range(nth):
        at = text.find(quoted, at + 1)
        if at < 0:
            return None
    return text.count("\n", 0, at) + 1


def _positive(value: object) -> bool:
    return (
        not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0 and math.isfinite(value)
    )
