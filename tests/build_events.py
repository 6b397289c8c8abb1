"""The `relaylens/buildFinished` notifications a pytest-lsp client has seen, and waiting
for one (the server's end-to-end tests share this).

    events = BuildEvents()
    events.listen(lsp_client)                                            # before initialize
    await events.first(lambda p: p["uri"] == uri and p["version"] == 2)   # waits, 120 s at most
    events.seen                                                          # every one, in order
"""

from __future__ import annotations

import asyncio
from typing import Callable

FINISHED = "relaylens/buildFinished"


class BuildEvents:
    def __init__(self) -> None:
        self.seen: list[dict] = []
        self._wake: list[asyncio.Future] = []

    def listen(self, client) -> None:
        """Hear the client's `relaylens/buildFinished` (pygls registers functions, not methods)."""
        client.feature(FINISHED)(lambda params: self.on_finished(params))

    def on_finished(self, params) -> None:
        self.seen.append(params if isinstance(params, dict) else dict(params._asdict()))
        while self._wake:
            future = self._wake.pop()
            if not future.done():
                future.set_result(None)

    async def nth(self, match: Callable[[dict], bool], n: int = 1, timeout: float = 120) -> dict:
        """The `n`-th notification `match` accepts, once it has come."""

        async def wait() -> dict:
            while True:
                mine = [p for p in self.seen if match(p)]
                if len(mine) >= n:
                    return mine[n - 1]
                future = asyncio.get_running_loop().create_future()
                self._wake.append(future)
                await future

        return await asyncio.wait_for(wait(), timeout)

    async def first(self, match: Callable[[dict], bool], timeout: float = 120) -> dict:
        return await self.nth(match, 1, timeout)

    async def of(self, uri: str, version: int, state: str | None = None, timeout: float = 120) -> dict:
        """The notification of (uri, version), in `state` if given."""
        return await self.first(
            lambda p: p["uri"] == uri and p["version"] == version and state in (None, p["state"]), timeout)
