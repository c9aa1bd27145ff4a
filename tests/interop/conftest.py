"""Fixtures for the interop tests: start `duet serve --fixtures testkit` over HTTP on a free
loopback port, hand its URL to the test, and always stop it afterwards.

`DUET_BIN` names the binary (scripts/python-interop.sh sets it); otherwise the debug build
under target/ is used.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[2]
DUET_BIN = os.environ.get("DUET_BIN") or str(ROOT / "target" / "debug" / "duet")

STARTUP_DEADLINE = 30.0
"""Seconds to wait for duet's "listening on" line."""

STOP_GRACE = 5.0
"""Seconds between SIGTERM and SIGKILL when stopping duet."""

# The URL ends at a space, or at the quote closing the message of a `--log-format json` line.
LISTENING = re.compile(r'listening on (http://[^\s"]+)')

HANDSHAKE = "2025-11-25"
"""What the SDK offers in `initialize` (legacy mode); duet supports it, so it must answer with it."""

MODERN = "2026-07-28"
"""What the SDK speaks in auto mode."""

EVENT_DEADLINE = 5.0
"""Seconds to wait for a notification or listen event."""


@dataclass
class DuetServer:
    """A running `duet serve` subprocess."""

    process: subprocess.Popen[str]
    url: str
    """The streamable HTTP endpoint, e.g. http://127.0.0.1:PORT/mcp."""
    stderr_lines: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        """scheme://host:port without the path."""
        match = re.match(r"(http://[^/]+)", self.url)
        assert match, self.url
        return match.group(1)

    @property
    def sse_url(self) -> str:
        """The legacy HTTP+SSE endpoint (served with `--transport sse`)."""
        return f"{self.base}/sse"

    def stderr(self) -> str:
        return "".join(self.stderr_lines)


def free_port() -> int:
    """A loopback port nothing listens on now, for a program that cannot pick one and say
    which (Prometheus, Redis, nginx)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _drain(stream, sink: list[str], ready: threading.Event, found: list[str]) -> None:
    """Read duet's stderr to the end (so it never blocks on a full pipe), noting the URL."""
    for line in stream:
        sink.append(line)
        if not found and (match := LISTENING.search(line)):
            found.append(match.group(1))
            ready.set()
    ready.set()  # EOF: duet exited (or closed stderr) before or after announcing itself


def stop_process(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if the process is still alive after STOP_GRACE seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_GRACE)


def start_duet(
    *extra: str, transport: str = "http", fixtures: str | None = "testkit"
) -> tuple[DuetServer, threading.Thread]:
    """Start duet on 127.0.0.1 with port 0 and wait (bounded) for the URL on stderr.

    `fixtures=None` passes no `--fixtures`: duet then serves what `extra` names (a workspace
    with `--root DIR`, a `--manifest`)."""
    if not os.access(DUET_BIN, os.X_OK):
        pytest.fail(f"duet binary not found at {DUET_BIN}; build it with `cargo build -p duet-cli --features fixtures`")
    layer = ["--fixtures", fixtures] if fixtures is not None else []
    argv = [
        DUET_BIN, "serve", *layer, "--transport", transport,
        "--host", "127.0.0.1", "--port", "0", *extra,
    ]  # fmt: skip
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    found: list[str] = []
    ready = threading.Event()
    reader = threading.Thread(target=_drain, args=(process.stderr, lines, ready, found), daemon=True)
    reader.start()
    deadline = time.monotonic() + STARTUP_DEADLINE
    ready.wait(timeout=max(0.0, deadline - time.monotonic()))
    if not found:
        stop_process(process)
        reader.join(timeout=STOP_GRACE)
        code = process.poll()
        why = f"exited with code {code}" if code is not None else f"gave no URL within {STARTUP_DEADLINE}s"
        pytest.fail(f"duet {why}; argv {argv}; stderr:\n{''.join(lines)}")
    return DuetServer(process=process, url=found[0], stderr_lines=lines), reader


@pytest.fixture
def anyio_backend() -> str:
    """The SDK is written against anyio; run the tests on asyncio."""
    return "asyncio"


@pytest.fixture
def duet_factory() -> Iterator:
    """Start duet servers with extra flags; every one is stopped at teardown."""
    started: list[tuple[DuetServer, threading.Thread]] = []

    def start(*extra: str, transport: str = "http", fixtures: str | None = "testkit") -> DuetServer:
        server, reader = start_duet(*extra, transport=transport, fixtures=fixtures)
        started.append((server, reader))
        return server

    try:
        yield start
    finally:
        for server, reader in started:
            stop_process(server.process)
            reader.join(timeout=STOP_GRACE)


@pytest.fixture
def duet_http(duet_factory) -> DuetServer:
    """duet over streamable HTTP (sessions, SSE responses allowed)."""
    return duet_factory()


@pytest.fixture
def duet_sse(duet_factory) -> DuetServer:
    """duet over streamable HTTP plus the legacy 2024-11-05 HTTP+SSE transport at /sse."""
    return duet_factory(transport="sse")


@pytest.fixture
def duet_stateless(duet_factory) -> DuetServer:
    """duet over streamable HTTP without sessions."""
    return duet_factory("--stateless")


class Inbox:
    """Collects what the client's `message_handler` receives and waits (bounded) for a match."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self._arrived = anyio.Event()

    async def handler(self, message: Any) -> None:
        self.messages.append(message)
        arrived, self._arrived = self._arrived, anyio.Event()
        arrived.set()

    async def wait_for(self, matches: Callable[[Any], bool]) -> Any:
        with anyio.fail_after(EVENT_DEADLINE):
            while True:
                for message in self.messages:
                    if matches(message):
                        return message
                await self._arrived.wait()


@dataclass(frozen=True)
class Connection:
    """How the SDK client reaches duet: a transport and the client's mode."""

    transport: str
    """stdio, http (Streamable HTTP) or sse (the legacy HTTP+SSE transport at /sse)."""
    mode: str

    @property
    def modern(self) -> bool:
        return self.mode != "legacy"

    @property
    def version(self) -> str:
        """The protocol version the client must end up with."""
        return MODERN if self.modern else HANDSHAKE
