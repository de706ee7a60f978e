"""Anthropic Messages on Amazon Bedrock (``POST /model/{model}/invoke-with-response-stream``): the Anthropic
stream's own events, each one base64 inside a ``chunk`` message of AWS's event-stream framing
(``_eventstream``), and errors as ``exception`` messages. Read by the Anthropic adapter, unchanged: only the
request and the framing differ. Its decisions are the Anthropic format's, with the envelope's members.

The request (as ``anthropic``'s ``AnthropicBedrock`` sends it): the model goes in the path, not the body;
``stream`` is not sent (the path says it); ``anthropic_version`` is Bedrock's. The request is not signed
here: a real Bedrock endpoint wants SigV4 (use the SDK through the tap, or sign in ``headers``).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from .._definitions import Definitions, informational, read
from .._eventstream import CONTENT_TYPE, require_botocore
from ._anthropic import DEFINITIONS as ANTHROPIC
from ._anthropic import AnthropicAdapter

BEDROCK_VERSION: Final = "bedrock-2023-05-31"  # the anthropic_version anthropic's Bedrock client sends

# The envelope (botocore's bedrock-runtime model, ``ResponseStream``): a ``chunk`` carries an Anthropic event;
# every other member is an exception message, the stream's error (its type read as words).
_MODEL: Final = "botocore bedrock-runtime ResponseStream."
_EXCEPTIONS: Final = (
    "internalServerException",
    "modelStreamErrorException",
    "validationException",
    "throttlingException",
    "modelTimeoutException",
    "serviceUnavailableException",
)
ENVELOPE: Final = {
    "chunk": read(_MODEL + "chunk", "one Anthropic stream event (base64 JSON in its bytes)"),
    **{name: read(_MODEL + name, "the stream's error: its type read as words") for name in _EXCEPTIONS},
    # Bedrock adds its own counts to the last event (AWS docs, "Anthropic Claude Messages API": streaming)
    "message_stop.amazon-bedrock-invocationMetrics": informational(
        "https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html",
        "Bedrock's token counts and latencies: the usage events already said them",
    ),
}
DEFINITIONS: Final = Definitions(
    events=MappingProxyType({**ANTHROPIC.events, **ENVELOPE}),
    content=ANTHROPIC.content,
    tools=ANTHROPIC.tools,
    finishes=ANTHROPIC.finishes,
)


class AnthropicBedrockAdapter(AnthropicAdapter):
    name = "anthropic-bedrock"
    default_headers = MappingProxyType({"accept": CONTENT_TYPE})

    __slots__ = ()

    def __init__(self) -> None:
        require_botocore()  # say which extra is missing before anything is sent
        super().__init__()

    def request(self, base_url: str, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        out = dict(body)
        model = urllib.parse.quote(str(out.pop("model", "")), safe=":")
        out.pop("stream", None)
        out.setdefault("anthropic_version", BEDROCK_VERSION)
        return f"{base_url.rstrip('/')}/model/{model}/invoke-with-response-stream", out
