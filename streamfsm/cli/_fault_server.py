"""``streamfsm fault-server``: the fault provider (``streamfsm.testing.FaultServer``) as a server of its own,
playing every catalog scenario, for a client in another process or language (a relay, an app, a test suite
that is not Python).

A request picks its scenario by path (``/scenario/<name, its / as %2F>/...``: the rest of the path is the
API's own, so an SDK's base URL can carry it) or, on any other path, by the ``x-streamfsm-scenario`` header;
one that names none gets ``--default``'s scenario, else a 404 saying how to pick one.
"""

from __future__ import annotations

import argparse
import ipaddress
import signal
import sys
from typing import Any
from urllib.parse import quote

from ._common import STARTUP_FAILED, epilog

_EXAMPLE = "openai-chat/text-then-fin"


def _served(formats: list[str] | None) -> list[Any]:
    """The catalog's scenarios a server can play: not those where nobody may listen (``connection-refused``:
    point the client at a closed port for that)."""
    from ..testing import catalog

    return [scenario for scenario in catalog(formats or None) if not scenario.no_listener]


def _how_to_pick(base_url: str, count: int) -> str:
    from ..testing import SCENARIO_HEADER, scenario_url

    return (
        f"streamfsm fault-server: {count} scenarios at {base_url}\n"
        f"  by path:   {base_url}/scenario/NAME/... (the / in NAME as %2F), e.g. an OpenAI base_url\n"
        f"             {scenario_url(base_url, _EXAMPLE)}/v1\n"
        f"  by header: {SCENARIO_HEADER}: NAME, on any path\n"
        "  names:     streamfsm fault-server --list\n"
        "Ctrl-C or SIGTERM stops it."
    )


def _not_found(detail: str) -> tuple[Any, ...]:
    from ..testing import SCENARIO_HEADER, Status

    body = (
        f"{detail}. Pick a scenario by path (/scenario/NAME/..., the / in NAME as %2F) or by the"
        f" {SCENARIO_HEADER} header; streamfsm fault-server --list names them.\n"
    ).encode()
    return (Status(404, (("content-type", "text/plain; charset=utf-8"),), body),)


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _router(scenarios: list[Any], default: Any) -> Any:
    from ..testing import Request, ScenarioRouter

    router = ScenarioRouter(scenarios, default=default)

    def route(request: Request) -> Any:
        name = ScenarioRouter.name_of(request)
        try:
            script = router(request)
            shown = name if name is not None else f"{default.name} (the default)"
        except LookupError:
            problem = f"no scenario named {name!r}" if name is not None else "the request names no scenario"
            script, shown = _not_found(problem), f"404, {problem}"
        # which scenario each request got: its method, path and the name, never its headers or body
        print(
            f"{request.method} {quote(request.path, safe='/%:@-._~')} -> {shown}", file=sys.stderr, flush=True
        )
        return script

    return route


async def _serve(args: argparse.Namespace, scenarios: list[Any], default: Any) -> None:
    import anyio

    from ..testing import FaultServer

    server = FaultServer(_router(scenarios, default), port=args.port, host=args.host)
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with server:
            print(_how_to_pick(server.base_url, len(scenarios)), flush=True)
            async for signum in signals:
                print(f"streamfsm fault-server: {signal.Signals(signum).name}, stopped", file=sys.stderr)
                return


def _fault_server(args: argparse.Namespace) -> int:
    import anyio

    scenarios = _served(args.format)
    if args.list:
        for scenario in scenarios:
            print(f"{scenario.name}  {scenario.description}")
        return 0
    by_name = {scenario.name: scenario for scenario in scenarios}
    if args.default is not None and args.default not in by_name:
        print(
            f"streamfsm fault-server: no scenario named {args.default!r} (--list names them)", file=sys.stderr
        )
        return 2
    if not _loopback(args.host):
        print(
            f"streamfsm fault-server: listening on {args.host}, beyond loopback: anyone who reaches it gets"
            " faults",
            file=sys.stderr,
        )
    try:
        anyio.run(_serve, args, scenarios, by_name.get(args.default))
    except OSError as exc:  # the port is taken, or the address is not this host's
        print(f"streamfsm fault-server: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return STARTUP_FAILED
    return 0


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, not {text!r}")
    return int(text)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ..testing import SCENARIO_HEADER
    from ..wire import FORMAT_NAMES

    command = commands.add_parser(
        "fault-server",
        help="serve the fault provider's catalog for clients in other processes",
        description="Serve every catalog scenario from the local fault provider until Ctrl-C or SIGTERM, for"
        " a client in another process or language (a relay, an app). A request picks its scenario by path"
        " (/scenario/NAME/..., the / in NAME as %2F, the rest of the path the API's own) or by the"
        f" {SCENARIO_HEADER} header; it prints the URL and how to pick one. Loopback by default.",
        epilog=epilog(
            "examples:\n"
            "  streamfsm fault-server --port 8765\n"
            "  streamfsm fault-server --list --format anthropic\n"
            f"  curl -N -H '{SCENARIO_HEADER}: {_EXAMPLE}' http://127.0.0.1:8765/v1/chat/completions"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument(
        "--port", type=_port, default=0, metavar="N", help="the port to listen on (default 0: any free one)"
    )
    command.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    command.add_argument(
        "--format",
        action="append",
        choices=FORMAT_NAMES,
        help="serve only this format's scenarios (repeatable; default: all)",
    )
    command.add_argument(
        "--default", metavar="NAME", help="the scenario for a request that names none (default: a 404)"
    )
    command.add_argument("--list", action="store_true", help="list the scenario names it serves and exit")
    command.set_defaults(run=_fault_server)
