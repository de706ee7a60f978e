"""``streamfsm probe``: one real request of any registered format, streaming or not, through the tap (as an
SDK's call goes), and its run record."""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from ..runtime import check_base_url
from ..wire import FORMATS, format_named
from ._common import epilog, positive_seconds

DEFAULT_PROMPT = "Say hello in one short sentence."


class UsageError(Exception):
    """Bad command-line input: exit status 2."""


def request_body(provider: str, model: str, prompt: str, tools: list[Any] | None) -> dict[str, Any]:
    """The smallest request of the format (``Format.probe``; the model included: each format's request
    builder moves it where the format wants it)."""
    probe = format_named(provider).probe
    body = probe.body(model, prompt)
    if tools:
        body.update(probe.tools(tools))
    return body


def request(provider: str, base_url: str, body: dict[str, Any], stream: bool) -> tuple[str, dict[str, Any]]:
    """The URL and body the format sends: its own streaming request, or the whole-answer one."""
    fmt = format_named(provider)
    url, out = fmt.adapter().request(base_url, body)
    if stream:
        return url, out
    if fmt.probe.whole_path is not None:
        streaming, whole = fmt.probe.whole_path
        if url.endswith(streaming):
            return url.removesuffix(streaming) + whole, out
    if "stream" in out:
        out["stream"] = False
    return url, out


def auth_headers(provider: str, key: str | None) -> dict[str, str]:
    """The format's default headers and the API key in the header the format takes it in."""
    fmt = format_named(provider)
    headers = dict(fmt.adapter.default_headers)
    if key:
        header = fmt.key_header
        headers[header] = f"Bearer {key}" if header == "authorization" else key
    return headers


def _signed(url: str, content: bytes, headers: dict[str, str], region: str | None) -> dict[str, str]:
    """Bedrock's SigV4 headers over the exact bytes sent, with the credentials botocore finds (the
    environment, a profile, an instance role)."""
    try:
        import botocore.session
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
    except ImportError:
        raise UsageError("Bedrock needs botocore: pip install 'streamfsm[bedrock]'") from None
    session = botocore.session.get_session()
    credentials = session.get_credentials()
    if credentials is None:
        raise UsageError("Bedrock needs AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ...)")
    host = urllib.parse.urlsplit(url).hostname or ""
    region = region or _region_of(host) or session.get_config_variable("region") or "us-east-1"
    signing = AWSRequest("POST", url, data=content, headers={**headers, "content-type": "application/json"})
    SigV4Auth(credentials, "bedrock", region).add_auth(signing)
    return dict(signing.headers.items())


def _region_of(host: str) -> str | None:
    parts = host.split(".")  # bedrock-runtime.<region>.amazonaws.com
    return parts[1] if len(parts) > 3 and parts[0].startswith("bedrock") else None


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


def _probe(args: argparse.Namespace) -> int:
    from .. import RunRecord, StreamConfig
    from ..tap import failure_of, http_client, run_of
    from ._logs import _clean

    key = None
    if args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            raise UsageError(f"--api-key-env {args.api_key_env}: the variable is not set")
    check_base_url(args.base_url)
    config = StreamConfig(connect_timeout=args.timeout_connect, idle_timeout=args.timeout_idle)
    body = request_body(args.provider, args.model, args.prompt, _tools(args.tools))
    url, sent = request(args.provider, args.base_url, body, stream=not args.no_stream)
    content = json.dumps(sent).encode()
    headers = auth_headers(args.provider, key)
    if format_named(args.provider).probe.signed:
        headers = _signed(url, content, headers, args.region)
    headers["content-type"] = "application/json"
    # Through the tap, as an SDK's call goes: the same run core, streaming or a whole answer.
    record: RunRecord | None = None
    finished = False
    with http_client(http="httpx", config=config, timeout=None) as client:
        try:
            with client.stream("POST", url, content=content, headers=headers) as response:
                run = run_of(response)
                if run is None:
                    raise UsageError(f"{url} is no {args.provider} call the tap recognises")
                for _ in response.iter_raw():
                    pass
            record, finished = run.record, run.finished
        except Exception as exc:  # what the library raised: the tap hung its failure on it
            failure = failure_of(exc)
            if failure is None:
                raise
            record = failure.record
    assert record is not None
    if args.json:
        print(record.to_json())
    else:
        summary = record["summary"]
        print(f"{_clean(summary['title'])}\n{_clean(summary['detail'])}\n")
        print(_table(record))
    return 0 if finished else 1


def run_probe(args: argparse.Namespace) -> int:
    try:
        return _probe(args)
    except (UsageError, ValueError) as exc:  # ValueError: a base URL refused before anything is sent
        print(f"streamfsm probe: {exc}", file=sys.stderr)
        return 2


def add_commands(commands: Any) -> None:
    probe = commands.add_parser(
        "probe",
        help="run one streaming request and print its run record",
        description="Send one small streaming request to a provider through open_stream and print what"
        " its run record says: how it ended, the verdict, events, tokens and timings (--json: the record).",
        epilog=epilog("A base URL that is not an http(s) URL with a host is a usage error: nothing is sent."),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    probe.add_argument("--provider", required=True, choices=sorted(FORMATS))
    probe.add_argument("--base-url", required=True, help="e.g. https://api.openai.com/v1")
    probe.add_argument("--model", required=True)
    probe.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    probe.add_argument("--prompt", default=DEFAULT_PROMPT)
    probe.add_argument("--tools", metavar="FILE", help="JSON file: a list of tools in the provider's format")
    probe.add_argument("--timeout-connect", type=positive_seconds, default=30.0, metavar="S")
    probe.add_argument("--timeout-idle", type=positive_seconds, default=600.0, metavar="S")
    probe.add_argument("--no-stream", action="store_true", help="ask for one whole answer, not a stream")
    probe.add_argument("--region", help="Bedrock: the AWS region to sign for (default: from the base URL)")
    probe.add_argument("--json", action="store_true", help="print exactly one JSON document: the record")
    probe.set_defaults(run=run_probe)
