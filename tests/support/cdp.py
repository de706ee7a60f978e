"""A small Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (stdlib only): headless Chromium
from the distribution's packages, offline (every host but loopback fails to resolve), a fresh profile."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser")
WAIT_S = 20.0


def chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path is not None:
            return path
    return None


class CdpError(RuntimeError):
    pass


class Browser:
    """One headless Chromium; ``page()`` opens a tab. Every wait is bounded by ``WAIT_S``."""

    def __init__(self, executable: str) -> None:
        self._profile = tempfile.mkdtemp(prefix="streamfsm-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds() -> None:  # the pipe protocol: Chromium reads commands on fd 3, writes on fd 4
            read, write = os.dup(to_chrome_r), os.dup(from_chrome_w)  # neither may land on 3 or 4 first
            os.dup2(read, 3)
            os.dup2(write, 4)

        self._process = subprocess.Popen(
            [
                executable,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-extensions",
                "--disable-default-apps",
                "--mute-audio",
                "--hide-scrollbars",
                # offline: no name resolves but loopback's, and no proxy is consulted
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
                "--no-proxy-server",
                f"--user-data-dir={self._profile}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=fds,
            close_fds=False,  # after fds(): closing would take 3 and 4 as well
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        with contextlib.suppress(CdpError, OSError):
            self.call("Browser.close")
        try:
            self._process.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(WAIT_S)
        os.close(self._to_chrome)
        os.close(self._from_chrome)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the protocol ---------------------------------------------------------------------------------------

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("Chromium did not answer in time")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if ready:
                data = os.read(self._from_chrome, 1 << 20)
                if not data:
                    raise CdpError("Chromium went away")
                self._buffer += data
        message, _, self._buffer = self._buffer.partition(b"\0")
        result: dict[str, Any] = json.loads(message)
        return result

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + WAIT_S
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == ident:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str | None, since: int) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT_S
        index = since
        while True:
            while index < len(self.events):
                event = self.events[index]
                index += 1
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            self.events.append(self._read_message(deadline))

    def page(self, *, width: int = 1280, height: int = 900) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for method in ("Page.enable", "Network.enable", "Runtime.enable"):
            self.call(method, session=session)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        return Page(self, session)


class Page:
    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.browser.call(method, params, self.session)

    def headers(self, headers: dict[str, str]) -> None:
        self.call("Network.setExtraHTTPHeaders", {"headers": headers})

    def goto(self, url: str) -> None:
        since = len(self.browser.events)
        result = self.call("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise CdpError(f"navigating to {url}: {result['errorText']}")
        self.browser.wait_event("Page.loadEventFired", self.session, since)

    def follow(self, expression: str) -> None:
        """Run ``expression`` (a click on a link, a form's submit) and wait for the page it loads."""
        since = len(self.browser.events)
        self.js(expression)
        self.browser.wait_event("Page.loadEventFired", self.session, since)

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise CdpError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def requested(self) -> list[str]:
        """Every URL this page asked for so far."""
        return [
            e["params"]["request"]["url"]
            for e in self.browser.events
            if e.get("method") == "Network.requestWillBeSent" and e.get("sessionId") == self.session
        ]

    def screenshot(self) -> bytes:
        height = self.js("Math.ceil(document.documentElement.scrollHeight)")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": int(height), "deviceScaleFactor": 1, "mobile": False},
        )
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        return base64.b64decode(data)
