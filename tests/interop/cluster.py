"""Several duet replicas sharing one Redis, behind nginx round-robin: the processes the
replica tests start. Debian's `redis-server` and `nginx` (scripts/python-interop.sh installs
them and names them in REDIS_BIN and NGINX_BIN) run on free loopback ports, with their files
in the test's temporary directory; every process is stopped by its PID at teardown.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import DuetServer, free_port, stop_process

REDIS_BIN = os.environ.get("REDIS_BIN", "/usr/bin/redis-server")
NGINX_BIN = os.environ.get("NGINX_BIN", "/usr/sbin/nginx")

READY_DEADLINE = 15.0
"""Seconds Redis or nginx may take to accept connections."""

REPLICAS = 3


def wait_for_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    """Returns once 127.0.0.1:`port` accepts a connection; fails if `process` exits first."""
    deadline = time.monotonic() + READY_DEADLINE
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{what} exited with code {process.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"{what} did not listen on {port} within {READY_DEADLINE}s")


class Redis:
    """A redis-server with no persistence, on one port for its whole life, so a restart
    comes back where the replicas look for it (and empty)."""

    def __init__(self, scratch: Path) -> None:
        if not os.access(REDIS_BIN, os.X_OK):
            pytest.fail(f"redis-server not found at {REDIS_BIN}; scripts/python-interop.sh installs it")
        self.port = free_port()
        self.scratch = scratch
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = [
            REDIS_BIN, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
            "--appendonly", "no", "--dir", str(self.scratch), "--logfile", str(self.scratch / "redis.log"),
        ]  # fmt: skip
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        wait_for_port(self.port, self.process, "redis-server")

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)
            self.process = None


NGINX_CONF = Path(__file__).with_name("nginx.conf")
"""The nginx configuration template, shared with bench/replicas.py."""


def start_nginx(scratch: Path, upstreams: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """nginx in front of `upstreams` (HOST:PORT each); returns it and its base URL."""
    if not os.access(NGINX_BIN, os.X_OK):
        pytest.fail(f"nginx not found at {NGINX_BIN}; scripts/python-interop.sh installs it")
    port = free_port()
    servers = "\n".join(f"        server {upstream};" for upstream in upstreams)
    conf = scratch / "nginx.conf"
    conf.write_text(NGINX_CONF.read_text().format(scratch=scratch, servers=servers, port=port))
    argv = [NGINX_BIN, "-p", str(scratch), "-c", str(conf), "-e", str(scratch / "nginx-error.log")]
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    wait_for_port(port, process, "nginx")
    return process, f"http://127.0.0.1:{port}"


@dataclass
class Cluster:
    redis: Redis
    replicas: list[DuetServer]
    nginx_url: str
    """scheme://host:port of nginx; the MCP endpoint is at `url`."""

    @property
    def url(self) -> str:
        return f"{self.nginx_url}/mcp"

    @property
    def sse_url(self) -> str:
        """The legacy HTTP+SSE endpoint through nginx."""
        return f"{self.nginx_url}/sse"

    def log_count(self, text: str) -> int:
        """How many lines of all replicas' stderr contain `text`."""
        return sum(line.count(text) for server in self.replicas for line in server.stderr_lines)


@pytest.fixture
def cluster_factory(duet_factory, tmp_path) -> Iterator:
    """`cluster_factory(transport, fixtures, *flags)`: Redis, three `duet serve --fixtures
    FIXTURES --store redis://… FLAGS` replicas over `transport` sharing a state key, with
    pages of three, and nginx in front of them; all stopped at teardown."""
    stops: list = []

    def start(transport: str = "http", fixtures: str = "testkit", *extra: str) -> Cluster:
        scratch = tmp_path / f"cluster-{len(stops)}"
        scratch.mkdir()
        redis = Redis(scratch)
        redis.start()
        stops.append(redis.stop)
        key_file = scratch / "state.key"
        key_file.write_text(secrets.token_hex(32))
        flags = ("--store", redis.url, "--state-key-file", str(key_file), "--log-level", "info", "--page-size", "3", *extra)
        replicas = [duet_factory(*flags, transport=transport, fixtures=fixtures) for _ in range(REPLICAS)]
        nginx, nginx_url = start_nginx(scratch, [server.base.removeprefix("http://") for server in replicas])
        stops.append(lambda: stop_process(nginx))
        return Cluster(redis, replicas, nginx_url)

    try:
        yield start
    finally:
        for stop in reversed(stops):
            stop()


@pytest.fixture
def cluster(cluster_factory) -> Cluster:
    """Three replicas over Streamable HTTP behind nginx."""
    return cluster_factory()
