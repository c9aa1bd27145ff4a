"""duet's spans as a collector receives them: `duet serve --otlp-endpoint` exports over
OTLP/HTTP to a receiver on loopback that decodes each request with the official
OpenTelemetry protocol definitions (PyPI opentelemetry-proto), and the test checks the span
names, kinds, attributes and parent ids the MCP semantic conventions ask for, down to a
manifest command that joins the trace through TRACEPARENT. The bearer token is in no span.

duet serves a manifest over Streamable HTTP with --auth-token; requests are raw 2026-07-28
POSTs carrying the caller's trace in `_meta` or in the HTTP header. Everything binds
127.0.0.1 on a free port and is stopped at teardown.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import textwrap
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DUET_BIN, MODERN, DuetServer, stop_process
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

TOKEN = "otlp-test-token-never-exported"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
HEADER_TRACE = "5bf92f3577b34da6a3ce929d0e0e4737"
HEADER_PARENT = "1111111111111111"

EXPORT_DEADLINE = 30.0
"""Seconds to wait for a batch (the exporter sends every 5 s, and at exit)."""


class Receiver:
    """An OTLP/HTTP trace receiver: keeps each request's raw body and decoded spans."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.requests: list[ExportTraceServiceRequest] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                ok = self.path == "/v1/traces" and self.headers["Content-Type"] == "application/x-protobuf"
                if ok:
                    decoded = ExportTraceServiceRequest()
                    decoded.ParseFromString(body)
                    with receiver.lock:
                        receiver.bodies.append(body)
                        receiver.requests.append(decoded)
                answer = ExportTraceServiceResponse().SerializeToString() if ok else b"wrong path or type"
                self.send_response(200 if ok else 400)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list[tuple[dict[str, str], Span]]:
        """Every span received, with its resource's attributes."""
        with self.lock:
            return [
                ({a.key: a.value.string_value for a in rs.resource.attributes}, span)
                for request in self.requests
                for rs in request.resource_spans
                for ss in rs.scope_spans
                for span in ss.spans
            ]

    def wait_for(self, name: str) -> Span:
        deadline = time.monotonic() + EXPORT_DEADLINE
        while time.monotonic() < deadline:
            for _, span in self.spans():
                if span.name == name:
                    return span
            time.sleep(0.2)
        pytest.fail(f"no span {name!r} within {EXPORT_DEADLINE}s: {[s.name for _, s in self.spans()]}")

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver()
    try:
        yield started
    finally:
        started.stop()


def attributes(span: Span) -> dict[str, object]:
    values: dict[str, object] = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        values[kv.key] = getattr(kv.value, kind) if kind else None
    return values


def call(server: DuetServer, request_id: int, tool: str, meta: dict, headers: dict | None = None) -> dict:
    """A raw 2026-07-28 tools/call with the bearer token; the answer's JSON-RPC message."""
    meta = {**meta, "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": tool, "arguments": {}, "_meta": meta}}  # fmt: skip
    request = urllib.request.Request(server.url, data=json.dumps(body).encode(), method="POST")
    for key, value in {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
        "Authorization": f"Bearer {TOKEN}",
        **(headers or {}),
    }.items():
        request.add_header(key, value)
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
        if response.headers["Content-Type"].startswith("text/event-stream"):
            text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


def test_spans_reach_a_collector_in_the_conventions_shape(duet_factory, receiver, tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(
        textwrap.dedent("""\
        [server]
        name = "traced-commands"
        version = "1.0.0"

        [[tool]]
        name = "trace_env"
        description = "Prints the trace context its command was given"
        command = ["printenv", "TRACEPARENT"]

        [[tool]]
        name = "fails"
        description = "A command that fails"
        command = ["false"]
        """)
    )
    server = duet_factory(
        "--manifest", str(manifest), "--auth-token", TOKEN, "--otlp-endpoint", receiver.url, fixtures=None
    )

    first = call(server, 1, "trace_env", {"traceparent": f"00-{TRACE}-{PARENT}-01", "baggage": "tenant=acme"})
    given = first["result"]["content"][0]["text"].strip()
    # Exported in batches while duet runs, not only at exit.
    request = receiver.wait_for("tools/call trace_env")
    assert call(server, 2, "fails", {})["result"]["isError"] is True
    header = {"traceparent": f"00-{HEADER_TRACE}-{HEADER_PARENT}-01"}
    assert "result" in call(server, 3, "trace_env", {}, headers=header)
    # What is left goes at exit.
    stop_process(server.process)
    receiver.wait_for("tools/call fails")

    spans = receiver.spans()
    assert all(resource.get("service.name") == "duet" for resource, _ in spans), spans[0][0]
    # One span per request and per command: the requests' `tracing` spans are the log's.
    names = sorted(s.name for _, s in spans)
    assert names == ["exec false", "exec printenv", "exec printenv", "tools/call fails",
                     "tools/call trace_env", "tools/call trace_env"], names  # fmt: skip
    assert request.kind == Span.SPAN_KIND_SERVER
    assert request.trace_id.hex() == TRACE and request.parent_span_id.hex() == PARENT, request
    assert attributes(request) | {"principal": None} == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "trace_env",
        "gen_ai.operation.name": "execute_tool",
        "mcp.protocol.version": MODERN,
        "jsonrpc.request.id": "1",
        "network.transport": "tcp",
        "principal": None,
    }, attributes(request)

    # The manifest command is a child span, and the command itself got that span's context.
    [command] = [s for _, s in spans if s.name == "exec printenv" and s.trace_id.hex() == TRACE]
    assert command.parent_span_id == request.span_id
    assert attributes(command)["process.exit.code"] == 0
    assert attributes(command)["process.executable.name"] == "printenv"
    assert given == f"00-{TRACE}-{command.span_id.hex()}-01", given

    failed = next(s for _, s in spans if s.name == "tools/call fails")
    assert attributes(failed)["error.type"] == "tool_error"
    assert failed.status.code == Status.STATUS_CODE_ERROR
    [failed_command] = [s for _, s in spans if s.name == "exec false"]
    assert failed_command.parent_span_id == failed.span_id
    assert attributes(failed_command)["process.exit.code"] == 1
    assert failed_command.status.code == Status.STATUS_CODE_ERROR

    # Without `_meta` context, the HTTP header's.
    [from_header] = [s for _, s in spans if s.trace_id.hex() == HEADER_TRACE and s.name == "tools/call trace_env"]
    assert from_header.parent_span_id.hex() == HEADER_PARENT

    with receiver.lock:
        assert not any(TOKEN.encode() in body for body in receiver.bodies), "the token was exported"


def test_stdio_spans_are_exported_too(receiver) -> None:
    """Over stdio the same export runs; what is queued goes when stdin ends and duet exits.
    With --otlp-sample-ratio 0 only the traces a caller sampled are exported."""

    def line(request_id: int, traceparent: str | None) -> str:
        meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
        if traceparent:
            meta["traceparent"] = traceparent
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                           "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}})  # fmt: skip

    lines = [
        line(1, f"00-{TRACE}-{PARENT}-01"),  # the caller sampled it
        line(2, None),  # a trace starts here: the ratio decides
        line(3, f"00-{HEADER_TRACE}-{HEADER_PARENT}-00"),  # the caller did not sample it
    ]
    argv = [DUET_BIN, "serve", "--fixtures", "testkit", "--otlp-endpoint", receiver.url, "--otlp-sample-ratio", "0"]
    done = subprocess.run(argv, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(answer) for answer in done.stdout.splitlines()]
    assert [a["result"]["isError"] for a in answers] == [False, False, False], done.stdout
    span = receiver.wait_for("tools/call echo")
    assert span.parent_span_id.hex() == PARENT
    assert attributes(span)["network.transport"] == "pipe"
    assert [attributes(s)["jsonrpc.request.id"] for _, s in receiver.spans()] == ["1"], "only the sampled trace"


def test_spans_go_in_batches_of_8192(receiver) -> None:
    """An export carries up to 8,192 spans, sixteen times the SDK's default, so that its own
    cost is spread over more spans; the SDK's OTEL_BSP_MAX_EXPORT_BATCH_SIZE still sets it.
    Spans reach the export thread in buffers of a 16th of a batch (each thread its own), so
    an export may be a buffer short of full, and the last ones go at exit: 8,300 spans take
    two exports of at most 8,192, or nine of at most 1,000 (none sent on the timer, set to
    a minute here)."""
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    lines = "".join(
        json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}}) + "\n"  # fmt: skip
        for i in range(8300)
    )
    argv = [DUET_BIN, "serve", "--fixtures", "testkit", "--otlp-endpoint", receiver.url]
    for environment, batch, exports in [({}, 8192, 2), ({"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1000"}, 1000, 9)]:
        with receiver.lock:
            receiver.requests.clear()
        done = subprocess.run(argv, input=lines, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "OTEL_BSP_SCHEDULE_DELAY": "60000", **environment})  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert len(done.stdout.splitlines()) == 8300
        with receiver.lock:
            sizes = [sum(len(ss.spans) for rs in r.resource_spans for ss in rs.scope_spans) for r in receiver.requests]
        assert sum(sizes) == 8300 and max(sizes) <= batch and len(sizes) == exports, (environment, sizes)
