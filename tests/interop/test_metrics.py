"""duet's metrics as an operator sees them: a real Prometheus (Debian's, which
scripts/python-interop.sh installs and names in PROMETHEUS_BIN) scrapes `duet serve
--metrics-addr` while the official Python SDK client makes known calls, and the test asks
Prometheus's HTTP API for the request histogram.

Both processes bind 127.0.0.1 on free ports and are stopped at teardown.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from conftest import MODERN, DuetServer, free_port, stop_process
from mcp import Client

pytestmark = pytest.mark.anyio

PROMETHEUS_BIN = os.environ.get("PROMETHEUS_BIN", "/usr/bin/prometheus")

QUERY_DEADLINE = 60.0
"""Seconds to wait for Prometheus to have scraped what the calls produced."""

# In the text line as in a `--log-format json` line's message.
METRICS = re.compile(r'metrics on http://([^\s"]+)/metrics')


def metrics_address(server: DuetServer) -> str:
    """The address in duet's "metrics on http://ADDR/metrics" line."""
    match = METRICS.search(server.stderr())
    assert match, server.stderr()
    return match.group(1)


@pytest.fixture
def prometheus() -> Iterator:
    """Starts Prometheus scraping the given target every second; stopped at teardown."""
    if not os.access(PROMETHEUS_BIN, os.X_OK):
        pytest.fail(f"Prometheus not found at {PROMETHEUS_BIN}; scripts/python-interop.sh installs it")
    started: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as scratch:

        def start(target: str) -> str:
            config = Path(scratch) / "prometheus.yml"
            config.write_text(
                "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                f"scrape_configs: [{{job_name: duet, static_configs: [{{targets: ['{target}']}}]}}]\n"
            )
            address = f"127.0.0.1:{free_port()}"
            argv = [
                PROMETHEUS_BIN, f"--config.file={config}", f"--storage.tsdb.path={scratch}/data",
                f"--web.listen-address={address}", "--log.level=warn",
            ]  # fmt: skip
            started.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
            return f"http://{address}"

        try:
            yield start
        finally:
            for process in started:
                stop_process(process)


def query(base: str, promql: str) -> list[dict]:
    """The vector a PromQL instant query returns (empty while Prometheus is not up yet)."""
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.load(response)
    except OSError:
        return []
    assert body["status"] == "success", body
    return body["data"]["result"]


def wait_for_value(base: str, promql: str, wanted: float) -> list[dict]:
    """Polls `promql` until its one sample has `wanted`, within QUERY_DEADLINE."""
    deadline = time.monotonic() + QUERY_DEADLINE
    result: list[dict] = []
    while time.monotonic() < deadline:
        result = query(base, promql)
        if len(result) == 1 and float(result[0]["value"][1]) == wanted:
            return result
        time.sleep(0.5)
    pytest.fail(f"{promql} did not reach {wanted} within {QUERY_DEADLINE}s: {result}")


async def test_prometheus_scrapes_the_request_histogram(duet_factory, prometheus) -> None:
    server = duet_factory("--metrics-addr", "127.0.0.1:0")
    base = prometheus(metrics_address(server))
    with anyio.fail_after(30):
        async with Client(server.url, mode="auto", read_timeout_seconds=10) as client:
            assert client.protocol_version == MODERN
            for _ in range(3):
                assert (await client.call_tool("echo", {"text": "hi"})).is_error is False
            assert (await client.call_tool("fail", {})).is_error is True
    histogram = "mcp_server_operation_duration_seconds_count"
    echo = f'{histogram}{{mcp_method_name="tools/call",gen_ai_tool_name="echo",mcp_protocol_version="{MODERN}"}}'
    [sample] = wait_for_value(base, echo, 3)
    assert sample["metric"]["network_transport"] == "tcp"
    assert "error_type" not in sample["metric"], sample
    [failed] = wait_for_value(base, f'{histogram}{{gen_ai_tool_name="fail"}}', 1)
    assert failed["metric"]["error_type"] == "tool_error"
    # The buckets are the conventions', up to five minutes.
    top = 'mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name="echo",le="300"}'
    wait_for_value(base, top, 3)
