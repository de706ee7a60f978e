"""The fault server's WebSocket side: a script that opens with `Upgrade`, played over one connection.

OpenAI Responses' WebSocket mode (see ``streamfsm.runtime.drivers.websocket`` for the wire and its sources):
the client upgrades, sends ``{"type": "response.create", ...}``, and reads one JSON text message per event;
several responses follow one another on the connection. The protocol is ``websockets``' Sans-I/O server
(``ServerProtocol``) over the server's anyio stream, so it plays on asyncio and trio alike.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from typing import Any, Final

import anyio
import anyio.abc

from ._script import Fin, HeaderPairs, NextCreate, Rst, Script, Send, SendRaw, Sleep, Stall, Upgrade, WsClose

__all__ = ["is_upgrade", "play_websocket"]

_CLOSE_WAIT_S: Final = 1.0  # how long a close frame waits for the client's own
_READ_BYTES: Final = 65536


def is_upgrade(script: Script) -> bool:
    return bool(script) and isinstance(script[0], Upgrade)


class _Peer:
    """The server's end of one WebSocket: messages in (counted), frames out."""

    def __init__(self, stream: anyio.abc.SocketStream, protocol: Any, pending: bytes) -> None:
        self.stream, self.protocol = stream, protocol
        self.pending = pending  # bytes the HTTP reader had buffered past the upgrade request
        self.messages = 0
        self.closed = False

    async def flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                await self.stream.send(data)

    async def next_message(self) -> bool:
        """Wait for the client's next message; False when it closed instead."""
        from websockets.frames import Frame, Opcode

        wanted = self.messages + 1
        while self.messages < wanted:
            if self.pending:
                data, self.pending = self.pending, b""
            else:
                try:
                    data = await self.stream.receive(_READ_BYTES)
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    self.closed = True
                    return False
            self.protocol.receive_data(data)
            for event in self.protocol.events_received():
                if isinstance(event, Frame):
                    if event.opcode is Opcode.CLOSE:
                        self.closed = True
                    elif event.fin and event.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
                        self.messages += 1
            await self.flush()
            if self.closed:
                return False
        return True

    async def drain(self) -> None:
        """Read (and answer) whatever comes until the client goes: a stall, or the wait after a close."""
        while not self.closed and await self.next_message():
            pass


async def play_websocket(
    stream: anyio.abc.SocketStream,
    headers: HeaderPairs,
    path: str,
    pending: bytes,
    script: Script,
    on_message: Callable[[], None] = lambda: None,
) -> None:
    """Play ``script`` (opening with `Upgrade`) on ``stream``, whose upgrade request has been read."""
    from websockets.http11 import Request
    from websockets.server import ServerProtocol

    protocol = ServerProtocol(max_size=None)
    # The server read the request already; its parser reads it again, so that the frames after it parse.
    head = f"GET {path} HTTP/1.1\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers) + "\r\n"
    protocol.receive_data(head.encode("latin-1"))
    request = next(event for event in protocol.events_received() if isinstance(event, Request))
    response = protocol.accept(request)
    protocol.send_response(response)
    peer = _Peer(stream, protocol, pending)
    await peer.flush()
    if response.status_code != 101:
        return
    for step in script:
        match step:
            case Upgrade() | NextCreate():
                if not await peer.next_message():
                    return
                on_message()
            case Send(data):
                protocol.send_text(data)
                await peer.flush()
            case SendRaw(data):
                await stream.send(data)
            case Sleep(seconds):
                await anyio.sleep(seconds)
            case WsClose(code, reason):
                protocol.send_close(code, reason) if code is not None else protocol.send_close()
                await peer.flush()
                with anyio.move_on_after(_CLOSE_WAIT_S):
                    await peer.drain()
                return
            case Fin():
                await stream.send_eof()
                return
            case Rst():
                raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return
            case Stall():
                await peer.drain()
                return
    await peer.drain()  # the script ran out: the connection stays open until the client closes it
