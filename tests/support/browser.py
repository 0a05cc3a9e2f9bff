"""A real headless Chromium (Debian's ``chromium``) driven over the DevTools protocol, for the studio's pages.

``with Browser(tmp_path) as b: b.open(url); b.eval("document.title")``. Each browser has its own profile (its
own cookies), so two raters are two browsers. Everything the page received (documents, scripts, JSON, the
event stream's bytes so far) is kept for :meth:`Browser.received`, to check what a rater's browser was sent.
Without chromium the test is skipped here and fails under CI (``.ci/run`` installs it).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp
import pytest

__all__ = ["Browser", "chromium"]


def chromium() -> str:
    """The browser's path; skips the test where it is missing (fails it under CI)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("headless Chromium is missing under CI: .ci/run installs Debian's chromium")
        pytest.skip("headless Chromium is not installed (Debian package chromium)")
    return found


class Browser:
    def __init__(self, folder: Path, *, width: int = 1280, height: int = 900) -> None:
        self.profile = folder / f"profile-{time.monotonic_ns()}"
        self.width, self.height = width, height
        self.loop = asyncio.new_event_loop()
        self._next = 0
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._responses: dict[str, str] = {}
        self._bodies: list[tuple[str, str]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.console: list[str] = []

    # Start and stop.
    def __enter__(self) -> Browser:
        self.profile.mkdir(parents=True)
        self.process = subprocess.Popen(
            [chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}",
             f"--window-size={self.width},{self.height}",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._run(self._connect())
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            self._run(self._close())
        finally:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.loop.close()

    def _run(self, coro: Any, timeout: float = 60) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))

    async def _connect(self) -> None:
        active = self.profile / "DevToolsActivePort"
        for _ in range(300):
            if active.is_file() and len(active.read_text().splitlines()) >= 2:
                break
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.process.returncode}")
            await asyncio.sleep(0.1)
        port = int(active.read_text().splitlines()[0])
        self.session = aiohttp.ClientSession()
        async with self.session.get(f"http://127.0.0.1:{port}/json/list") as response:
            targets = await response.json()
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = await self.session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        self._reader = self.loop.create_task(self._read())
        await self._send("Page.enable")
        await self._send("Runtime.enable")
        await self._send("Network.enable", {"maxTotalBufferSize": 50_000_000})

    async def _close(self) -> None:
        for task in [*self._tasks, self._reader]:
            task.cancel()
        await asyncio.gather(*self._tasks, self._reader, return_exceptions=True)
        await self.ws.close()
        await self.session.close()

    # The protocol.
    async def _send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next += 1
        future: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        self._pending[self._next] = future
        await self.ws.send_str(json.dumps({"id": self._next, "method": method, "params": params or {}}))
        reply = await future
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    async def _read(self) -> None:
        async for message in self.ws:
            data = json.loads(message.data)
            if "id" in data:
                future = self._pending.pop(data["id"], None)
                if future is not None and not future.done():
                    future.set_result(data)
                continue
            method, params = data.get("method"), data.get("params", {})
            if method == "Network.responseReceived":
                self._responses[params["requestId"]] = params["response"]["url"]
            elif method == "Network.loadingFinished" and params["requestId"] in self._responses:
                task = self.loop.create_task(self._keep_body(params["requestId"]))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            elif method == "Network.dataReceived" and params["requestId"] in self._responses:
                pass
            elif method == "Runtime.consoleAPICalled":
                self.console.append(" ".join(str(a.get("value", "")) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                self.console.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:500])

    async def _keep_body(self, request_id: str) -> None:
        try:
            body = await self._send("Network.getResponseBody", {"requestId": request_id})
        except RuntimeError:
            return
        text = body.get("body", "")
        if body.get("base64Encoded"):
            text = base64.b64decode(text).decode("utf-8", "replace")
        self._bodies.append((self._responses[request_id], text))

    # What a test does.
    def open(self, url: str, *, timeout: float = 30) -> None:
        """Go to ``url`` and wait until the document has loaded."""
        self._run(self._send("Page.navigate", {"url": url}))
        time.sleep(0.05)
        self.wait("document.readyState === 'complete'", timeout=timeout)

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        result = self._run(self._send("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                           "returnByValue": True}))
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {json.dumps(result['exceptionDetails'])[:1000]}")
        return result.get("result", {}).get("value")

    def wait(self, condition: str, *, timeout: float = 15) -> Any:
        """Poll a JavaScript condition until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = self.eval(condition)
            except AssertionError:
                last = None
            if last:
                return last
            self._run(asyncio.sleep(0.1))
        raise AssertionError(f"timed out after {timeout} s waiting for {condition} (last: {last!r}); console: "
                             f"{self.console[-5:]}")

    def html(self) -> str:
        return str(self.eval("document.documentElement.outerHTML"))

    def text(self, selector: str = "body") -> str:
        return str(self.eval(f"document.querySelector({json.dumps(selector)}).innerText"))

    def click(self, selector: str) -> None:
        self.eval(f"document.querySelector({json.dumps(selector)}).click()")

    def fill(self, selector: str, value: str) -> None:
        """Type ``value`` into a field (input/textarea/select) and fire the events a person's typing fires."""
        self.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.value = {json.dumps(value)};"
                  " e.dispatchEvent(new Event('input', {bubbles: true}));"
                  " e.dispatchEvent(new Event('change', {bubbles: true})); })()")

    def fetch_status(self, url: str, method: str = "GET") -> int:
        """The status of a request the page's own session makes (its cookies), e.g. to another rater's queue."""
        return int(self.eval(f"fetch({json.dumps(url)}, {{method: {json.dumps(method)}}}).then(r => r.status)"))

    def received(self, *, settle: float = 0.5) -> list[tuple[str, str]]:
        """(url, body) of every response the browser received so far."""
        self._run(asyncio.sleep(settle))
        return list(self._bodies)

    def screenshot(self, path: Path, *, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.eval("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": max(size[0], self.width), "height": min(size[1], 4000),
                                "scale": 1})
        shot = self._run(self._send("Page.captureScreenshot", params))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
