"""Headless Chromium driven over the DevTools protocol on a pipe, for the report's browser test.

``Browser`` starts the distribution's Chromium with ``--remote-debugging-pipe`` (messages are
JSON, NUL-terminated, on file descriptors 3 and 4 of the browser) and a fresh profile, attaches
to its page and offers what the test needs: load a page at a window size, evaluate JavaScript,
take a screenshot. No websocket library and no driver download.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]


class BrowserError(RuntimeError):
    pass


class Browser:
    """One Chromium process and its first page; use as a context manager."""

    def __init__(self, timeout_s: float = 60.0) -> None:
        if not Path(CHROMIUM).is_file():
            raise BrowserError(f"{CHROMIUM} not found: install chromium")
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="npu-hil-chromium-")
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def pipes_as_3_and_4() -> None:  # runs in the child before exec
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)
            for fd in (3, 4):  # dup2 onto itself keeps close-on-exec
                os.set_inheritable(fd, True)

        self.process = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            preexec_fn=pipes_as_3_and_4,
            close_fds=False,  # closing would happen after preexec_fn, taking 3 and 4 too
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        pages = [t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page"]
        target = (
            pages[0]["targetId"] if pages else self.call("Target.createTarget", url="")["targetId"]
        )
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        self.page("Page.enable")
        self.page("Runtime.enable")

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its answer; events meanwhile go to ``events``."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def page(self, method: str, **params: Any) -> dict[str, Any]:
        return self.call(method, self.session, **params)

    def _receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise BrowserError("chromium stopped answering")
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise BrowserError("chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        data: dict[str, Any] = json.loads(message)
        return data

    def open(self, url: str, width: int, height: int) -> None:
        """Load ``url`` in a ``width`` x ``height`` window and wait for its load event."""
        self.page(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.events.clear()
        self.page("Page.navigate", url=url)
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._receive())

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able values only)."""
        reply = self.page("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in reply:
            raise BrowserError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def screenshot(self, path: Path) -> None:
        """The visible window as a PNG."""
        data = self.page("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for fd in (self._read, self._write):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
