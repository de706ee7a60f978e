"""``streamfsm probe``: one real streaming request through ``open_stream``, and its run record."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ._common import epilog, positive_seconds

PROVIDERS = ("openai-chat", "openai-responses", "anthropic", "gemini")
DEFAULT_PROMPT = "Say hello in one short sentence."


class UsageError(Exception):
    """Bad command-line input: exit status 2."""


def request_body(provider: str, model: str, prompt: str, tools: list[Any] | None) -> dict[str, Any]:
    """The smallest streaming request for each wire format."""
    if provider == "openai-chat":
        body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}]}
    elif provider == "openai-responses":
        body = {"model": model, "input": prompt}
    elif provider == "anthropic":
        body = {"model": model, "max_tokens": 1024, "messages": [{"role": "user", "content": prompt}]}
    else:
        body = {"model": model, "contents": [{"role": "user", "parts": [{"text": prompt}]}]}
    if tools:
        body["tools"] = tools
    return body


def auth_headers(provider: str, key: str | None) -> dict[str, str]:
    headers = {"anthropic-version": "2023-06-01"} if provider == "anthropic" else {}
    if key:
        if provider == "anthropic":
            headers["x-api-key"] = key
        elif provider == "gemini":
            headers["x-goog-api-key"] = key
        else:
            headers["authorization"] = f"Bearer {key}"
    return headers


def _tools(path: str | None) -> list[Any] | None:
    if path is None:
        return None
    try:
        tools = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--tools {path}: cannot read a JSON list of tools ({type(exc).__name__})") from None
    if not isinstance(tools, list):
        raise UsageError(f"--tools {path}: expected a JSON list of tool definitions")
    return tools


def _seconds(value: object) -> str:
    return "-" if value is None else f"{value} s"  # an absent timing is "-", never "None s"


def _table(record: Any) -> str:
    from ._logs import _clean  # provider-controlled strings must never drive the terminal

    outcome, retry, timings = record["outcome"], record["retry"], record["timings"]
    rows = [
        ("state", outcome["state"]),
        ("class", f"{outcome['class']} ({outcome['summary_key']})"),
        ("verdict", f"{retry['verdict']} -> {retry['action']}"),
        ("edge", outcome["edge"] or "-"),
        ("events", ", ".join(f"{k}={v}" for k, v in record["stream_events"].items()) or "-"),
        ("tokens", ", ".join(f"{k}={v}" for k, v in record["tokens"].items() if v is not None) or "-"),
        ("finish", record["finish_reason"]["raw"] or "-"),
        ("to headers", _seconds(timings["to_headers_s"])),
        ("total", _seconds(timings["total_s"])),
        ("request id", record["ids"]["provider_request_id"] or "-"),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"  {name:<{width}}  {_clean(value)}" for name, value in rows)


async def _probe(args: argparse.Namespace) -> int:
    from .. import StreamConfig, StreamFailed, open_stream
    from ._logs import _clean

    key = None
    if args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            raise UsageError(f"--api-key-env {args.api_key_env}: the variable is not set")
    config = StreamConfig(connect_timeout=args.timeout_connect, idle_timeout=args.timeout_idle)
    body = request_body(args.provider, args.model, args.prompt, _tools(args.tools))
    run = open_stream(
        args.provider,
        base_url=args.base_url,
        json=body,
        headers=auth_headers(args.provider, key),
        config=config,
    )
    try:
        async with run:
            async for _ in run:
                pass
    except StreamFailed:
        pass  # the record says what happened
    record = run.record
    assert record is not None
    if args.json:
        print(record.to_json())
    else:
        summary = record["summary"]
        print(f"{_clean(summary['title'])}\n{_clean(summary['detail'])}\n")
        print(_table(record))
    return 0 if run.finished else 1


def run_probe(args: argparse.Namespace) -> int:
    import anyio

    try:
        code: int = anyio.run(_probe, args)
    except (UsageError, ValueError) as exc:  # ValueError: open_stream refuses a base URL before sending
        print(f"streamfsm probe: {exc}", file=sys.stderr)
        return 2
    return code


def add_commands(commands: Any) -> None:
    probe = commands.add_parser(
        "probe",
        help="run one streaming request and print its run record",
        description="Send one small streaming request to a provider through open_stream and print what"
        " its run record says: how it ended, the verdict, events, tokens and timings (--json: the record).",
        epilog=epilog("A base URL that is not an http(s) URL with a host is a usage error: nothing is sent."),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    probe.add_argument("--provider", required=True, choices=PROVIDERS)
    probe.add_argument("--base-url", required=True, help="e.g. https://api.openai.com/v1")
    probe.add_argument("--model", required=True)
    probe.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    probe.add_argument("--prompt", default=DEFAULT_PROMPT)
    probe.add_argument("--tools", metavar="FILE", help="JSON file: a list of tools in the provider's format")
    probe.add_argument("--timeout-connect", type=positive_seconds, default=30.0, metavar="S")
    probe.add_argument("--timeout-idle", type=positive_seconds, default=600.0, metavar="S")
    probe.add_argument("--json", action="store_true", help="print exactly one JSON document: the record")
    probe.set_defaults(run=run_probe)
