"""The relay's upstream connections: several httpx pools side by side, each request to the next in turn.

httpcore's pool walks all its connections and waiting requests on every request and every close, so one
pool's cost per request grows with the streams open through it (at 1,000 streams, most of a plain relay's
CPU). ``SHARDS`` pools each hold a share of the connections: a request walks its own pool's share. The
limits stay the configured totals, split between the pools (a request waits for its own pool's room).
"""

from __future__ import annotations

import itertools
from typing import Final

import httpx

__all__ = ["SHARDS", "ShardedPool", "UpstreamClient"]

SHARDS: Final = 16  # 1,000 streams: about 60 connections per pool
# A request waits for its own pool's room: split only where each pool holds many connections, so that one
# pool full while another has room happens only near the total (with 2 connections in 2 pools, one long
# stream made the next request time out beside an idle pool).
_PER_POOL: Final = 64


class ShardedPool(httpx.AsyncHTTPTransport):
    """``shards`` ``httpx.AsyncHTTPTransport`` pools (fewer when ``max_connections`` leaves under 64 per
    pool), requests given to them in turn. ``max_connections`` (None: unbounded) and
    ``max_keepalive_connections`` are the totals over all pools.

    An ``AsyncHTTPTransport`` itself (its own pool never made) for the tap, which then knows its pools say
    when a request leaves (httpcore's trace): the connect watchdog counts from then, not from a pool wait."""

    def __init__(
        self, *, max_connections: int | None, max_keepalive_connections: int, shards: int | None = None
    ) -> None:
        # No super().__init__(): the pools below do the IO.
        shards = SHARDS if shards is None else shards
        count = shards if max_connections is None else max(1, min(shards, max_connections // _PER_POOL))
        # One TLS context for all pools, the one each would build (certifi's CAs, verified, no client cert):
        # loading the CAs is most of a pool's making (16 of them were a quarter second of each relay start).
        tls = httpx.create_ssl_context(trust_env=False)
        self.pools = [
            httpx.AsyncHTTPTransport(
                verify=tls,
                limits=httpx.Limits(
                    max_connections=None if max_connections is None else _share(max_connections, count, i),
                    max_keepalive_connections=_share(max_keepalive_connections, count, i),
                ),
                trust_env=False,
            )
            for i in range(count)
        ]
        self._next = itertools.cycle(self.pools).__next__

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._next().handle_async_request(request)

    async def __aenter__(self) -> ShardedPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for pool in self.pools:
            await pool.aclose()


def _share(total: int, count: int, index: int) -> int:
    """Pool ``index``'s part of ``total`` split between ``count`` pools (the parts add up to ``total``)."""
    return total // count + (1 if index < total % count else 0)


class _NoCookies(httpx.Cookies):
    def extract_cookies(self, response: httpx.Response) -> None:
        pass


class UpstreamClient(httpx.AsyncClient):
    """The relay's client: it keeps no cookies. An upstream's ``Set-Cookie`` goes to the client that asked,
    never into a jar shared by every client of the relay (httpx parsed each response's cookies into it: a
    visible part of a short stream's cost)."""

    @property
    def cookies(self) -> httpx.Cookies:
        return _NoCookies()

    @cookies.setter
    def cookies(self, cookies: object) -> None:
        pass
