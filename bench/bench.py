#!/usr/bin/env python3
"""duet's benchmark driver: runs duet and its peers side by side, interleaved, and writes
a results table. Started by bench/run.sh, which installs wrk and builds every server first;
see bench/README.md. Standard library only: the charts of each table are drawn by charts.py,
run with the python of the benchmark's own virtual environment (--charts-python).

Every server is started on 127.0.0.1 (a fresh process for each measurement, so its peak RSS
belongs to that measurement alone) and stopped when the measurement ends; every load run is
bounded in time or in requests.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import http.client
import json
import math
import os
import platform
import queue
import re
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from typing import Callable

import results

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

P26 = "2026-07-28"
P25 = "2025-11-25"
ACCEPT_BOTH = "application/json, text/event-stream"
ACCEPT_JSON = "application/json"

# The request bodies of the cases: an echo call in each era, and the lists.
META26 = {
    "io.modelcontextprotocol/protocolVersion": P26,
    "io.modelcontextprotocol/clientInfo": {"name": "duet-bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def body(method: str, params: dict | None = None, rid=1) -> str:
    msg = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg, separators=(",", ":"))


def call26() -> str:
    return body("tools/call", {"name": "echo", "arguments": {"text": "hi"}, "_meta": META26})


def call25() -> str:
    return body("tools/call", {"name": "echo", "arguments": {"text": "hi"}})


def list26(cursor: str | None) -> str:
    params = {"_meta": META26}
    if cursor is not None:
        params["cursor"] = cursor
    return body("tools/list", params)


def init25(rid=0) -> str:
    return body(
        "initialize",
        {"protocolVersion": P25, "capabilities": {}, "clientInfo": {"name": "duet-bench", "version": "1"}},
        rid,
    )


# The client case's eras: each program's argument, and the revision it must agree on.
CLIENT_ERAS = {"2026": P26, "handshake": P25}
# The client case's programs, in the order of its table: duet's, then the peers'.
CLIENT_KEYS = ("duet", "rmcp", "python")

INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}, separators=(",", ":"))


def headers26(method: str, name: str | None, accept: str) -> dict:
    h = {"Content-Type": "application/json", "Accept": accept, "MCP-Protocol-Version": P26, "Mcp-Method": method}
    if name:
        h["Mcp-Name"] = name
    return h


def headers25(accept: str = ACCEPT_BOTH, session: str | None = None) -> dict:
    h = {"Content-Type": "application/json", "Accept": accept, "MCP-Protocol-Version": P25}
    if session:
        h["Mcp-Session-Id"] = session
    return h


# ---------------------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------------------


class OtlpSink:
    """Where duet's OTLP variant sends its spans: an OTLP/HTTP endpoint on 127.0.0.1 that reads
    each export and answers 200 with an empty ExportTraceServiceResponse (zero bytes in
    protobuf), keeping only counts. It runs in this process for the whole run, on the same
    cores as everything else, as a collector beside a server would; when the server has a core
    of its own, the sink keeps to the load generator's (confine)."""

    def __init__(self):
        import http.server

        sink = self
        self.exports = 0
        self.bytes = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802 (the standard library's name)
                size = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(size)
                sink.exports += 1
                sink.bytes += size
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        started = threading.Event()

        def serve():
            self.thread_id = threading.get_native_id()
            started.set()
            self.server.serve_forever()

        threading.Thread(target=serve, daemon=True).start()
        started.wait()

    def confine(self, cpus: set[int]):
        """Keeps the sink's accepting thread, and the thread it starts for each connection
        from now on, to cpus."""
        os.sched_setaffinity(self.thread_id, cpus)


class Paths:
    def __init__(self, args):
        self.duet = args.duet_bin
        t = args.peer_bin_dir
        self.ceiling = os.path.join(t, "hyper-ceiling")
        self.rmcp = os.path.join(t, "rmcp-echo")
        self.tower = os.path.join(t, "tower-mcp-echo")
        # The client case's programs (bench/clients/): the Rust callers as built in duet's
        # workspace, the Python SDK's with the python of its virtual environment.
        c = args.client_bin_dir or ""
        self.duet_client = os.path.join(c, "duet-client-echo")
        self.rmcp_client = os.path.join(c, "rmcp-client-echo")
        self.python_client = [args.client_python or "python3", os.path.join(HERE, "clients", "python_client_echo.py")]


class Spec:
    """One server configuration: what to run, and how it shows in the tables."""

    def __init__(self, key: str, label: str, argv: list[str], kind: str, accept_override: str | None = None):
        self.key = key  # stable id
        self.label = label  # shown in tables
        self.argv = argv
        # "duet", "variant" (duet with other options), "baseline" (duet from --baseline-bin),
        # "ceiling", "floor", "peer"
        self.kind = kind
        self.accept_override = accept_override  # an Accept the server insists on


def duet_http(paths, *flags, fixtures="testkit"):
    # Every connection of the load generator comes from 127.0.0.1: the per-peer cap (an
    # eighth of --max-connections, 64) would otherwise be what a run at 64 connections or
    # more measures.
    return [paths.duet, "serve", "--fixtures", fixtures, "--transport", "http", "--host", "127.0.0.1", "--port", "0",
            "--max-connections-per-peer", "0", *flags]


def has_bench_fixture(duet_bin: str) -> bool:
    """Whether this duet binary has `--fixtures bench` (200 numbered tools)."""
    p = subprocess.run([duet_bin, "serve", "--help"], capture_output=True, text=True)
    return bool(re.search(r"\bbench\b", p.stdout + p.stderr))


def before_label(label: str) -> str:
    """The label of a duet server from --baseline-bin: "duet (before)", "duet (before) --stateless",
    "duet (before, stdio)"."""
    rest = label[len("duet"):]
    return "duet (before" + (", " + rest[2:] if rest.startswith(" (") else ")" + rest)


# The endpoint a server announces; not duet's metrics endpoint ("duet metrics on http://…").
# It ends at a space, or at the quote closing the message of a `--log-format json` line.
URL_RE = re.compile(r'(?<!metrics on )(http://127\.0\.0\.1:\d+/[^\s"]*)')


def confined_to(cpus: set[int] | None):
    """A preexec_fn that confines the child process, and every thread it starts, to the given
    CPUs before it runs (as `taskset` would, so a runtime sizes its thread pool to them); None
    when cpus is None."""
    if cpus is None:
        return None
    cpus = set(cpus)
    return lambda: os.sched_setaffinity(0, cpus)


class Pinning:
    """CPUs for a load run: the server on server_cpus, wrk with wrk_threads threads on wrk_cpus."""

    def __init__(self, server_cpus: set[int], wrk_cpus: set[int], wrk_threads: int = 1):
        self.server_cpus = server_cpus
        self.wrk_cpus = wrk_cpus
        self.wrk_threads = wrk_threads

    @classmethod
    def own_core_for_wrk(cls) -> tuple[Pinning | None, str | None]:
        """The server on the last available CPU, wrk (1 thread) on the others: (pinning, None),
        or (None, why not) when fewer than 2 CPUs are available."""
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            return None, f"only {len(cpus)} CPU available to the benchmark (needs 2)"
        return cls({cpus[-1]}, set(cpus[:-1])), None

    def as_row(self) -> dict:
        return {"server": sorted(self.server_cpus), "wrk": sorted(self.wrk_cpus), "wrk_threads": self.wrk_threads}


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time process pid has used so far (all its threads), from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Server:
    """A running server process: started on 127.0.0.1, stopped by stop() (or at exit)."""

    live: set = set()

    def __init__(self, spec: Spec, stdio: bool = False, cpus: set[int] | None = None):
        self.spec = spec
        self.tail: list[str] = []
        self.url = None
        self.proc = subprocess.Popen(
            spec.argv,
            stdin=subprocess.PIPE if stdio else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdio else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "RUST_LOG": "error"},
            start_new_session=True,
            preexec_fn=confined_to(cpus),
        )
        Server.live.add(self)
        if not stdio:
            self._wait_url()
        threading.Thread(target=self._drain, daemon=True).start()

    def _wait_url(self, timeout=20.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            text = line.decode(errors="replace")
            self.tail.append(text)
            m = URL_RE.search(text)
            if m:
                self.url = m.group(1)
                return
        self.stop()
        raise RuntimeError(f"{self.spec.label} did not start: {''.join(self.tail[-10:])}")

    def _drain(self):
        for line in self.proc.stderr:
            self.tail = (self.tail + [line.decode(errors="replace")])[-20:]

    def status(self) -> dict:
        out = {}
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if k in ("VmHWM", "VmRSS"):
                        out[k] = int(v.split()[0])  # KiB
        except OSError:
            pass
        return out

    def cpu_seconds(self) -> float | None:
        """User plus system CPU time the server has used so far (all its threads)."""
        return cpu_seconds(self.proc.pid)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        Server.live.discard(self)

    @classmethod
    def stop_all(cls):
        for s in list(cls.live):
            s.stop()


class ClientProgram:
    """One of the client case's programs (bench/clients/), connected to a server: started with
    the server's URL, the era and how many calls it keeps in flight, it prints `ready VERSION`
    once connected, answers each `run SECONDS` on its stdin with `done CALLS ERRORS`, and closes
    its connection and exits at the end of its stdin (bench/clients/src/lib.rs)."""

    def __init__(self, label: str, argv: list[str], timeout=30.0):
        self.label = label
        self.tail: list[str] = []
        self.lines: queue.Queue = queue.Queue()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env={**os.environ, "RUST_LOG": "error"}, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()
        self.version = self._answer("ready", timeout)[0]

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _drain(self):
        for line in self.proc.stderr:
            self.tail = (self.tail + [line])[-20:]

    def _answer(self, word: str, timeout: float) -> list[str]:
        """The words after `word` on the program's next line, waited for at most timeout seconds."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            line = None
        if line is None or not line.startswith(word + " "):
            self.close()
            raise RuntimeError(f"the {self.label} answered {line!r}, not {word}: "
                               f"{''.join(self.tail[-5:])}")
        return line.split()[1:]

    def run(self, seconds: float) -> tuple[int, int]:
        """Calls for `seconds`: (calls, errors)."""
        self.proc.stdin.write(f"run {seconds}\n")
        self.proc.stdin.flush()
        calls, errors = self._answer("done", seconds + 30)
        return int(calls), int(errors)

    def cpu_seconds(self) -> float | None:
        return cpu_seconds(self.proc.pid)

    def close(self):
        """Ends its stdin and waits for it to close its connection and exit (killed after 10 s)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---------------------------------------------------------------------------------------
# A small HTTP client for setup, checks and sessions (not for load)
# ---------------------------------------------------------------------------------------


class Client:
    def __init__(self, url: str, timeout=10.0):
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.path = u.hostname, u.port, u.path or "/"
        self.timeout = timeout
        self.conn = None

    def post(self, body: str, headers: dict):
        """POST; returns (status, headers dict lower-cased, list of JSON messages in the reply)."""
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.conn.request("POST", self.path, body=body.encode(), headers=headers)
                r = self.conn.getresponse()
                raw = r.read()
                hdrs = {k.lower(): v for k, v in r.getheaders()}
                if r.getheader("connection", "").lower() == "close":
                    self.close()
                return r.status, hdrs, parse_messages(hdrs.get("content-type", ""), raw)
            except (http.client.HTTPException, ConnectionError, OSError):
                self.close()
                if attempt:
                    raise
        raise AssertionError

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def parse_messages(ctype: str, raw: bytes) -> list:
    text = raw.decode(errors="replace")
    if "text/event-stream" in ctype:
        msgs, data = [], []
        for line in text.splitlines() + [""]:
            if line.startswith("data:"):
                data.append(line[5:].lstrip())
            elif line == "" and data:
                try:
                    msgs.append(json.loads("\n".join(data)))
                except ValueError:
                    pass
                data = []
        return msgs
    try:
        return [json.loads(text)] if text.strip() else []
    except ValueError:
        return []


def the_result(msgs: list):
    for m in msgs:
        if isinstance(m, dict) and ("result" in m or "error" in m):
            return m
    return None


def open_session(client: Client, accept: str = ACCEPT_BOTH) -> str:
    status, hdrs, msgs = client.post(init25(), {"Content-Type": "application/json", "Accept": accept})
    reply = the_result(msgs)
    sid = hdrs.get("mcp-session-id")
    if status != 200 or not sid or reply is None or "result" not in reply:
        raise RuntimeError(f"initialize failed: {status} {msgs}")
    status, _, _ = client.post(INITIALIZED, headers25(accept, sid))
    if status not in (200, 202, 204):
        raise RuntimeError(f"notifications/initialized answered {status}")
    return sid


def check_echo(url: str, body_text: str, headers: dict) -> tuple[str, str | None]:
    """Sends the case's request once: (content type, problem or None)."""
    status, hdrs, msgs = Client(url).post(body_text, headers)
    reply = the_result(msgs)
    ctype = hdrs.get("content-type", "?").split(";")[0]
    if status != 200:
        return ctype, f"HTTP {status}"
    if reply is None or "result" not in reply:
        return ctype, f"no result: {msgs!r:.200}"
    if "hi" not in json.dumps(reply["result"]):
        return ctype, f"unexpected result {reply['result']!r:.200}"
    return ctype, None


# ---------------------------------------------------------------------------------------
# wrk
# ---------------------------------------------------------------------------------------

LUA_DONE = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean))
end
"""


def lua_str(s: str) -> str:
    level = 1
    while ("]" + "=" * level + "]") in s:
        level += 1
    eq = "=" * level
    return f"[{eq}[{s}]{eq}]"


def lua_requests(path: str, reqs: list[tuple[dict, str]], stop_after: int | None = None) -> str:
    """A wrk script that sends the given (headers, body) requests in turn (one alone goes
    through wrk's static-request fast path); with stop_after, each thread stops after that
    many responses."""
    out = []
    if len(reqs) == 1:
        h, b = reqs[0]
        out.append('wrk.method = "POST"')
        out.append(f"wrk.body = {lua_str(b)}")
        for k, v in h.items():
            out.append(f"wrk.headers[ {lua_str(k)} ] = {lua_str(v)}")
    else:
        out.append("local specs = {")
        for h, b in reqs:
            hs = ", ".join(f"[ {lua_str(k)} ] = {lua_str(v)}" for k, v in h.items())
            out.append(f"  {{ headers = {{ {hs} }}, body = {lua_str(b)} }},")
        out.append("}")
        out.append("local reqs = {}")
        out.append("local idx = 0")
        out.append("init = function(args)")
        out.append(f"  for i, s in ipairs(specs) do reqs[i] = wrk.format('POST', {lua_str(path)}, s.headers, s.body) end")
        out.append("  idx = math.random(#reqs) - 1")
        out.append("end")
        out.append("request = function() idx = idx % #reqs + 1; return reqs[idx] end")
    if stop_after is not None:
        out.append("local seen = 0")
        out.append("response = function(status, headers, body)")
        out.append(f"  seen = seen + 1")
        out.append(f"  if seen == {int(stop_after)} then io.write('BENCHSTOP\\n'); io.flush(); wrk.thread:stop() end")
        out.append("end")
    out.append(LUA_DONE)
    return "\n".join(out)


class Wrk:
    def __init__(self, binary: str, workdir: str):
        self.binary = binary
        self.workdir = workdir
        self.n = 0

    def run(self, url: str, reqs, conns: int, seconds: float, stop_after_total: int | None = None,
            threads: int | None = None, cpus: set[int] | None = None) -> dict:
        """One wrk run; threads: 1 at 1 connection, else 2, unless given; cpus: where wrk may run."""
        threads = threads or (1 if conns < 2 else 2)
        per_thread = None if stop_after_total is None else max(1, stop_after_total // threads)
        path = urllib.parse.urlsplit(url).path
        self.n += 1
        script = os.path.join(self.workdir, f"case{self.n}.lua")
        with open(script, "w") as f:
            f.write(lua_requests(path, reqs, per_thread))
        dur = max(1, int(round(seconds)))
        cmd = [self.binary, f"-t{threads}", f"-c{conns}", f"-d{dur}s", "--timeout", "5s", "-s", script, url]
        if stop_after_total is None:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=dur + 60, preexec_fn=confined_to(cpus))
            stdout, stderr = p.stdout, p.stderr
        else:
            # wrk waits out its duration even when every thread has stopped: once each thread
            # says it has its share, interrupt it (SIGINT makes wrk stop and report).
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 preexec_fn=confined_to(cpus))
            lines, stopped = [], 0
            for line in p.stdout:
                lines.append(line)
                if line.startswith("BENCHSTOP"):
                    stopped += 1
                    if stopped == threads:
                        p.send_signal(signal.SIGINT)
            p.wait(timeout=dur + 60)
            stdout, stderr = "".join(lines), p.stderr.read()
        for line in stdout.splitlines():
            if line.startswith("BENCHJSON "):
                r = json.loads(line[len("BENCHJSON "):])
                secs = r["duration_us"] / 1e6
                r["rps"] = r["requests"] / secs if secs else 0.0
                r["errors"] = r["connect"] + r["read"] + r["write"] + r["status"] + r["timeout"]
                return r
        raise RuntimeError(f"wrk gave no result: {stdout[-500:]} {stderr[-500:]}")


# ---------------------------------------------------------------------------------------
# The harness
# ---------------------------------------------------------------------------------------


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Bench:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.paths = Paths(args)
        self.work = tempfile.mkdtemp(prefix="duet-bench-")
        self.wrk = Wrk(args.wrk, self.work)
        self.rows: list[dict] = []  # every measurement
        self.notes: list[str] = []
        self.started = time.time()
        self.load_start = loadavg()
        self.current_conns = 1
        self.sink: OtlpSink | None = None

    # -- logging
    def log(self, msg: str):
        el = time.time() - self.started
        print(f"[{el:6.1f}s] {msg}", flush=True)

    def otlp_sink(self) -> OtlpSink:
        """The run's OTLP sink, started the first time a case needs it."""
        if self.sink is None:
            self.sink = OtlpSink()
        return self.sink

    # -- server specs
    def with_baseline(self, specs: list[Spec]) -> list[Spec]:
        """The specs, each duet one followed by the same server from --baseline-bin when given."""
        baseline = self.args.baseline_bin
        out = []
        for s in specs:
            out.append(s)
            if baseline and s.kind == "duet":
                out.append(Spec(f"{s.key}-before", before_label(s.label), [baseline, *s.argv[1:]], "baseline",
                                s.accept_override))
        return out

    def specs_2026_json(self):
        p = self.paths
        return self.with_baseline([
            Spec("duet", "duet", duet_http(p), "duet"),
            Spec("duet-metrics", "duet --metrics-addr (Prometheus recorder on)",
                 duet_http(p, "--metrics-addr", "127.0.0.1:0"), "variant"),
            Spec("duet-otlp", "duet --otlp-endpoint (every request's span exported)",
                 duet_http(p, "--otlp-endpoint", self.otlp_sink().url), "variant"),
            Spec("duet-otlp-sampled", "duet --otlp-endpoint --otlp-sample-ratio 0.1",
                 duet_http(p, "--otlp-endpoint", self.otlp_sink().url, "--otlp-sample-ratio", "0.1"), "variant"),
            Spec("ceiling", "hyper ceiling", [p.ceiling], "ceiling"),
            Spec("floor", "JSON floor (hyper + serde_json echo)", [p.ceiling, "--echo"], "floor"),
            Spec("rmcp", "rmcp (stateless JSON)", [p.rmcp, "http-json"], "peer", accept_override=ACCEPT_BOTH),
            Spec("tower", "tower-mcp (stateless)", [p.tower, "http"], "peer"),
        ])

    def specs_2026_sse(self):
        p = self.paths
        return self.with_baseline([
            Spec("duet", "duet", duet_http(p), "duet"),
            Spec("rmcp", "rmcp (default, SSE)", [p.rmcp, "http-default"], "peer"),
            Spec("tower", "tower-mcp (sse_responses)", [p.tower, "http-sse"], "peer"),
        ])

    def specs_2025_session(self):
        p = self.paths
        return self.with_baseline([
            Spec("duet", "duet", duet_http(p), "duet"),
            Spec("rmcp", "rmcp (default: sessions, SSE)", [p.rmcp, "http-default"], "peer"),
            Spec("tower", "tower-mcp (sessions)", [p.tower, "http"], "peer"),
        ])

    def specs_2025_stateless(self):
        p = self.paths
        return self.with_baseline([
            Spec("duet", "duet --stateless", duet_http(p, "--stateless"), "duet"),
            Spec("ceiling", "hyper ceiling", [p.ceiling], "ceiling"),
            Spec("rmcp", "rmcp (stateless JSON)", [p.rmcp, "http-json"], "peer"),
            Spec("tower", "tower-mcp (stateless)", [p.tower, "http"], "peer"),
        ])

    # -- one load measurement on a fresh server
    def measure_load(self, case: str, spec: Spec, conns: int, pass_no: int, prepare,
                     pinning: Pinning | None = None) -> dict:
        """prepare(server) -> (list of (headers, body), content type, problem). With pinning, the
        server and wrk run on the CPUs it gives them."""
        row = {"case": case, "server": spec.key, "label": spec.label, "kind": spec.kind, "conns": conns,
               "pass": pass_no}
        if pinning:
            row["cpus"] = pinning.as_row()
        placed = {"threads": pinning.wrk_threads, "cpus": pinning.wrk_cpus} if pinning else {}
        server = None
        try:
            server = Server(spec, cpus=pinning.server_cpus if pinning else None)
            reqs, ctype, problem = prepare(server)
            row["ctype"] = ctype
            if problem:
                row["problem"] = problem
                self.log(f"  {case} {spec.label} c={conns}: FAILED CHECK: {problem}")
                return row
            if self.args.warmup > 0:
                self.wrk.run(server.url, reqs, conns, self.args.warmup, **placed)
            cpu_before = server.cpu_seconds()
            r = self.wrk.run(server.url, reqs, conns, self.args.duration, **placed)
            cpu_after = server.cpu_seconds()
            st = server.status()
            # The case's request must still work after the load.
            _, after = prepare_check_again(server, reqs)
            row.update(rps=r["rps"], p50=r["p50"], p99=r["p99"], errors=r["errors"], requests=r["requests"],
                       hwm=st.get("VmHWM"), rss=st.get("VmRSS"))
            if cpu_before is not None and cpu_after is not None and r["requests"]:
                row["cpu_us"] = (cpu_after - cpu_before) / r["requests"] * 1e6
            if after:
                row["problem"] = f"after load: {after}"
            if not server.alive():
                row["problem"] = "server exited"
            self.log(f"  {case} {spec.label:32s} c={conns:<3d} {r['rps']:9.0f} req/s  p50 {r['p50'] / 1000:7.2f} ms"
                     f"  p99 {r['p99'] / 1000:7.2f} ms  HWM {st.get('VmHWM', 0) / 1024:6.1f} MiB  err {r['errors']}")
        except Exception as e:  # noqa: BLE001 - a failed server is a row, not the end of the run
            row["problem"] = str(e)[:300]
            self.log(f"  {case} {spec.label} c={conns}: ERROR {e}")
        finally:
            if server:
                server.stop()
            self.rows.append(row)
        return row

    def interleave(self, case: str, specs: list[Spec], conc_list: list[int], prepare_for,
                   pinning: Pinning | None = None):
        """Runs every (server, concurrency) of a case, alternating servers, for each pass; the
        order of servers rotates between passes."""
        if self.args.servers:
            # A duet server kept brings its baseline (--baseline-bin) with it.
            keep = self.args.servers.split(",")
            specs = [s for s in specs if s.key in keep or (s.kind == "baseline" and s.key.removesuffix("-before") in keep)]
        if not specs:
            self.log(f"case {case}: skipped: none of --servers runs it")
            return
        self.log(f"case {case}")
        for pass_no in range(self.args.passes):
            for conns in conc_list:
                order = specs[pass_no % len(specs):] + specs[:pass_no % len(specs)]
                for spec in order:
                    self.measure_load(case, spec, conns, pass_no, prepare_for(spec), pinning)

    # -- the cases
    def case_2026(self, conc_list):
        def prep_json(spec):
            return lambda server: echo26(server.url, spec.accept_override or ACCEPT_JSON)

        def prep_sse(spec):
            return lambda server: echo26(server.url, ACCEPT_BOTH)

        self.interleave("2026-json", self.specs_2026_json(), conc_list, prep_json)
        sink = self.otlp_sink()
        self.notes.append(f"2026 JSON: the OTLP sink received {sink.exports} exports, "
                          f"{sink.bytes / 2**20:.1f} MiB of protobuf, from duet --otlp-endpoint.")
        self.interleave("2026-sse", self.specs_2026_sse(), conc_list, prep_sse)
        # The JSON case again at 16 connections, with wrk off the server's core: on shared cores
        # p99 measures the scheduler (the bare ceiling's is the MCP servers').
        pinning, why_not = Pinning.own_core_for_wrk()
        if pinning is None:
            self.log(f"case 2026-json-own-core: skipped: {why_not}")
            self.notes.append(f"2026 JSON with the load generator on its own core: not run, {why_not}.")
        else:
            # The sink off the server's core too: a collector runs elsewhere.
            if self.sink:
                self.sink.confine(pinning.wrk_cpus)
            self.interleave("2026-json-own-core", self.specs_2026_json(), [16], prep_json, pinning)
            if self.sink:
                self.sink.confine(os.sched_getaffinity(0))

    def case_signals(self, rounds: int):
        """What the operating signals cost (the signals issue): plain duet, duet with metrics and
        duet exporting every span, started once for each placement (16 and 64 connections on
        shared cores, 16 with wrk on its own core) and kept up, then measured in turn for one
        second each, `rounds` times, the order rotating. One server's throughput here swings by
        about 13 % (standard deviation) from one second to the next, so a few passes cannot
        tell 8 % from 12 %: a variant's loss is read from many rounds, each against plain duet's
        second beside it (signals_loss)."""
        specs = [s for s in self.specs_2026_json() if s.key in SIGNALS_VARIANTS or s.key == "duet"]
        pinning, why_not = Pinning.own_core_for_wrk()
        placements = [(SIGNALS_CASES[0], 16, None), (SIGNALS_CASES[0], 64, None)]
        if pinning is None:
            self.notes.append(f"The signals' cost with the load generator on its own core: not measured, {why_not}.")
        else:
            placements.append((SIGNALS_CASES[1], 16, pinning))
        for case, conns, pin in placements:
            self.log(f"case {case} c={conns}: {rounds} rounds")
            placed = {"threads": pin.wrk_threads, "cpus": pin.wrk_cpus} if pin else {}
            if pin and self.sink:
                self.sink.confine(pin.wrk_cpus)
            up: list[tuple[Spec, Server, list]] = []
            try:
                for spec in specs:
                    server = Server(spec, cpus=pin.server_cpus if pin else None)
                    reqs, _, problem = echo26(server.url, ACCEPT_JSON)
                    if problem:
                        raise RuntimeError(f"{spec.label}: {problem}")
                    self.wrk.run(server.url, reqs, conns, max(1.0, self.args.warmup), **placed)
                    up.append((spec, server, reqs))
                for round_no in range(rounds):
                    for spec, server, reqs in up[round_no % len(up):] + up[:round_no % len(up)]:
                        r = self.wrk.run(server.url, reqs, conns, 1, **placed)
                        self.rows.append({"case": case, "server": spec.key, "label": spec.label, "kind": spec.kind,
                                          "conns": conns, "pass": round_no, "rps": r["rps"], "errors": r["errors"]})
                for spec, server, reqs in up:
                    _, after = prepare_check_again(server, reqs)
                    if after or not server.alive():
                        raise RuntimeError(f"{spec.label} after the load: {after or 'exited'}")
            except Exception as e:  # noqa: BLE001 - a failed server is a row, not the end of the run
                self.log(f"  {case} c={conns}: ERROR {e}")
                self.rows.append({"case": case, "server": "duet", "label": "duet", "kind": "duet", "conns": conns,
                                  "pass": 0, "problem": str(e)[:300]})
            finally:
                for _, server, _ in up:
                    server.stop()
                if pin and self.sink:
                    self.sink.confine(os.sched_getaffinity(0))
            for variant in SIGNALS_VARIANTS:
                loss = signals_loss(self.rows, case, variant, conns)
                if loss:
                    self.log(f"  {case} c={conns} {variant}: {loss['median'] * 100:.1f} % lost "
                             f"(95 % CI {loss['low'] * 100:.1f} to {loss['high'] * 100:.1f} %, {loss['rounds']} rounds)")

    def case_2025(self, conc_list):
        def prep_session(spec):
            def prepare(server):
                conns = max(1, self.current_conns)
                c = Client(server.url)
                sessions = [open_session(c) for _ in range(min(conns, 64))]
                reqs = [(headers25(ACCEPT_BOTH, sid), call25()) for sid in sessions]
                ctype, problem = check_echo(server.url, call25(), reqs[0][0])
                return reqs, ctype, problem
            return prepare

        def prep_stateless(spec):
            def prepare(server):
                h = headers25(ACCEPT_BOTH)
                ctype, problem = check_echo(server.url, call25(), h)
                return [(h, call25())], ctype, problem
            return prepare

        # One session per connection (round-robin over as many sessions as connections).
        self.log("case 2025-session")
        specs = self.specs_2025_session()
        for pass_no in range(self.args.passes):
            for conns in conc_list:
                self.current_conns = conns
                order = specs[pass_no % len(specs):] + specs[:pass_no % len(specs)]
                for spec in order:
                    self.measure_load("2025-session", spec, conns, pass_no, prep_session(spec))
        self.interleave("2025-stateless", self.specs_2025_stateless(), conc_list, prep_stateless)

    def case_tools_list(self, conns: int):
        p = self.paths
        specs = []
        # duet at its default page size (1000: the whole listing in one page, as rmcp sends it)
        # and with pages of 100, as tower-mcp is configured, so that both costs show.
        paged = duet_http(p, "--page-size", "100", fixtures="bench")
        duets = [Spec("duet", "duet --fixtures bench", duet_http(p, fixtures="bench"), "duet"),
                 Spec("duet-paged", "duet --fixtures bench --page-size 100", paged, "duet")]
        for spec in self.with_baseline(duets):
            if has_bench_fixture(spec.argv[0]):
                specs.append(spec)
            else:
                self.notes.append(f"tools/list: `{spec.argv[0]}` has no `--fixtures bench` (200 numbered tools); "
                                  f"the {spec.label} row is missing.")
        specs += [
            Spec("rmcp", "rmcp (stateless JSON, 200 tools)", [p.rmcp, "http-json", "--tools", "200"], "peer",
                 accept_override=ACCEPT_BOTH),
            Spec("tower", "tower-mcp (stateless, 200 tools)", [p.tower, "http", "--tools", "200"], "peer"),
        ]

        def prep(spec):
            def prepare(server):
                h = headers26("tools/list", None, spec.accept_override or ACCEPT_JSON)
                c = Client(server.url)
                cursor, reqs, names = None, [], set()
                for _ in range(50):
                    b = list26(cursor)
                    status, hdrs, msgs = c.post(b, h)
                    reply = the_result(msgs)
                    if status != 200 or reply is None or "result" not in reply:
                        return [], hdrs.get("content-type", "?"), f"tools/list failed: {status} {msgs!r:.200}"
                    reqs.append((h, b))
                    names.update(t["name"] for t in reply["result"].get("tools", []))
                    cursor = reply["result"].get("nextCursor")
                    if not cursor:
                        break
                spec.pages = len(reqs)
                spec.tools = len(names)
                problem = None if len(names) >= 200 else f"only {len(names)} tools listed"
                return reqs, hdrs.get("content-type", "?").split(";")[0], problem
            return prepare

        self.interleave("tools-list", specs, [conns], prep)
        for spec in specs:
            for row in self.rows:
                if row["case"] == "tools-list" and row["server"] == spec.key:
                    row["pages"] = getattr(spec, "pages", None)
                    row["tools"] = getattr(spec, "tools", None)

    def case_sessions(self, counts: list[int]):
        p = self.paths
        big = str(max(counts) * 2)
        specs = self.with_baseline([
            Spec("duet", "duet", duet_http(p, "--max-sessions", big, "--max-sessions-per-principal", big), "duet"),
            Spec("rmcp", "rmcp (default)", [p.rmcp, "http-default"], "peer"),
            Spec("tower", "tower-mcp", [p.tower, "http"], "peer"),
        ])
        self.log("case idle sessions")
        for pass_no in range(self.args.passes):
            for n in counts:
                order = specs[pass_no % len(specs):] + specs[:pass_no % len(specs)]
                for spec in order:
                    self.rows.append(self.measure_sessions(spec, n, pass_no))

    def measure_sessions(self, spec: Spec, n: int, pass_no: int) -> dict:
        row = {"case": "sessions", "server": spec.key, "label": spec.label, "kind": spec.kind, "sessions": n,
               "pass": pass_no}
        server = Server(spec)
        try:
            # Warm up: a few sessions first, so the baseline includes the runtime's threads and
            # first allocations rather than charging them to the measured sessions.
            warm = Client(server.url)
            for _ in range(8):
                open_session(warm)
            warm.close()
            time.sleep(0.3)
            before = server.status().get("VmRSS", 0)
            local = threading.local()
            t0 = time.time()

            def one(_):
                c = getattr(local, "c", None)
                if c is None:
                    c = local.c = Client(server.url)
                return open_session(c)

            with concurrent.futures.ThreadPoolExecutor(max_workers=32) as ex:
                ids = list(ex.map(one, range(n)))
            took = time.time() - t0
            time.sleep(1.0)
            after = server.status().get("VmRSS", 0)
            # The sessions are still there: a request on a few of them works.
            probe = Client(server.url)
            dead = 0
            for sid in ids[:: max(1, n // 20)]:
                status, _, msgs = probe.post(call25(), headers25(ACCEPT_BOTH, sid))
                r = the_result(msgs)
                if status != 200 or r is None or "result" not in r:
                    dead += 1
            row.update(before=before, after=after, per_session=(after - before) / n, open_s=took,
                       hwm=server.status().get("VmHWM"), errors=dead)
            if len(set(ids)) != n:
                row["problem"] = "session ids repeat"
            self.log(f"  sessions {spec.label:24s} n={n:<6d} {row['per_session']:6.2f} KiB/session "
                     f"(RSS {before / 1024:.1f} -> {after / 1024:.1f} MiB, opened in {took:.1f}s, probes dead {dead})")
        except Exception as e:  # noqa: BLE001
            row["problem"] = str(e)[:300]
            self.log(f"  sessions {spec.label} n={n}: ERROR {e}")
        finally:
            server.stop()
        return row

    def case_stdio(self, n: int, window: int):
        p = self.paths
        specs = self.with_baseline([
            Spec("duet", "duet (stdio)", [p.duet, "serve", "--fixtures", "testkit"], "duet"),
            Spec("rmcp", "rmcp stdio()", [p.rmcp, "stdio"], "peer"),
            Spec("rmcp-pipes", "rmcp stdio_pipes()", [p.rmcp, "stdio-pipes"], "peer"),
            Spec("tower", "tower-mcp StdioTransport", [p.tower, "stdio"], "peer"),
        ])
        self.log(f"case stdio ({n} requests, {window} in flight)")
        for pass_no in range(self.args.passes):
            order = specs[pass_no % len(specs):] + specs[:pass_no % len(specs)]
            for spec in order:
                self.rows.append(self.measure_stdio(spec, n, window, pass_no))

    def measure_stdio(self, spec: Spec, n: int, window: int, pass_no: int) -> dict:
        row = {"case": "stdio", "server": spec.key, "label": spec.label, "kind": spec.kind, "pass": pass_no,
               "window": window}
        server = Server(spec, stdio=True)
        try:
            r = stdio_pipeline(server, n, window, timeout=max(30.0, n / 2000))
            st = server.status()
            row.update(rps=r["rps"], errors=r["errors"], requests=r["answered"], hwm=st.get("VmHWM"),
                       rss=st.get("VmRSS"), p50=r.get("p50"), p99=r.get("p99"))
            if r["answered"] < n:
                row["problem"] = f"only {r['answered']} of {n} answered"
            self.log(f"  stdio {spec.label:28s} {r['rps']:9.0f} req/s  HWM {st.get('VmHWM', 0) / 1024:6.1f} MiB"
                     f"  err {r['errors']}")
        except Exception as e:  # noqa: BLE001
            row["problem"] = str(e)[:300]
            self.log(f"  stdio {spec.label}: ERROR {e} {''.join(server.tail[-5:])}")
        finally:
            try:
                server.proc.stdin.close()
            except OSError:
                pass
            server.stop()
        return row

    def case_growth(self, first: int, total: int, conns: int):
        p = self.paths
        specs = self.with_baseline([
            Spec("duet", "duet --stateless", duet_http(p, "--stateless"), "duet"),
            Spec("rmcp", "rmcp (stateless JSON)", [p.rmcp, "http-json"], "peer"),
            Spec("tower", "tower-mcp (stateless)", [p.tower, "http"], "peer"),
        ])
        self.log(f"case RSS growth ({first} then {total} stateless requests)")
        for spec in specs:
            row = {"case": "growth", "server": spec.key, "label": spec.label, "kind": spec.kind, "pass": 0}
            server = Server(spec)
            try:
                h = headers25(ACCEPT_BOTH)
                ctype, problem = check_echo(server.url, call25(), h)
                if problem:
                    raise RuntimeError(problem)
                # Bounded by count (each wrk thread stops after its share) and by time.
                limit_s = 300
                r1 = self.wrk.run(server.url, [(h, call25())], conns, limit_s, stop_after_total=first)
                time.sleep(0.5)
                rss1 = server.status().get("VmRSS", 0)
                r2 = self.wrk.run(server.url, [(h, call25())], conns, limit_s, stop_after_total=total - r1["requests"])
                time.sleep(0.5)
                st = server.status()
                rss2 = st.get("VmRSS", 0)
                done = r1["requests"] + r2["requests"]
                row.update(first=r1["requests"], total=done, rss_first=rss1, rss_total=rss2,
                           growth=(rss2 - rss1) / rss1 if rss1 else None, hwm=st.get("VmHWM"),
                           errors=r1["errors"] + r2["errors"], rps=r2["rps"])
                self.log(f"  growth {spec.label:24s} RSS {rss1 / 1024:.1f} MiB after {r1['requests']}, "
                         f"{rss2 / 1024:.1f} MiB after {done} ({row['growth'] * 100:+.1f}%)")
            except Exception as e:  # noqa: BLE001
                row["problem"] = str(e)[:300]
                self.log(f"  growth {spec.label}: ERROR {e}")
            finally:
                server.stop()
            self.rows.append(row)

    def client_programs(self) -> list[tuple[str, str, list[str], str]]:
        """The client case's programs: (key, label, argv without its arguments, kind)."""
        p = self.paths
        return [("duet", "duet_client", [p.duet_client], "duet"),
                ("rmcp", "rmcp client", [p.rmcp_client], "peer"),
                ("python", "Python SDK client", p.python_client, "peer")]

    def case_client(self, in_flight: list[int], passes: int):
        """Each client program against a fresh duet (`serve --fixtures testkit`, HTTP) in each era
        and at each number of calls in flight, the programs interleaved and rotated between
        passes."""
        programs = self.client_programs()
        self.log(f"case client ({', '.join(label for _, label, _, _ in programs)}; eras {', '.join(CLIENT_ERAS)}; "
                 f"in flight {','.join(map(str, in_flight))})")
        for pass_no in range(passes):
            order = programs[pass_no % len(programs):] + programs[:pass_no % len(programs)]
            for era in CLIENT_ERAS:
                for n in in_flight:
                    for program in order:
                        self.rows.append(self.measure_client(program, era, n, pass_no))

    def measure_client(self, program: tuple[str, str, list[str], str], era: str, in_flight: int,
                       pass_no: int) -> dict:
        key, label, argv, kind = program
        a = self.args
        row = {"case": "client", "server": f"{key}-{era}", "label": label, "kind": kind, "era": CLIENT_ERAS[era],
               "conns": in_flight, "pass": pass_no}
        server = Server(Spec("duet", "duet", duet_http(self.paths), "duet"))
        client = None
        try:
            client = ClientProgram(label, [*argv, server.url, era, str(in_flight)])
            if client.version != CLIENT_ERAS[era]:
                raise RuntimeError(f"agreed on {client.version}, not {CLIENT_ERAS[era]}")
            if a.warmup:
                client.run(a.warmup)
            cpu0, server0, t0 = client.cpu_seconds(), server.cpu_seconds(), time.monotonic()
            calls, errors = client.run(a.duration)
            took = time.monotonic() - t0
            cpu1, server1 = client.cpu_seconds(), server.cpu_seconds()
            row.update(rps=calls / took, calls=calls, errors=errors,
                       client_cpu_us=(cpu1 - cpu0) / calls * 1e6 if calls and cpu0 is not None and cpu1 is not None else None,
                       cpu_us=(server1 - server0) / calls * 1e6 if calls and server0 is not None and server1 is not None else None)
            self.log(f"  client {label:18s} {era:9s} {in_flight:3d} in flight {row['rps']:8.0f} calls/s  "
                     f"client CPU {row['client_cpu_us'] or 0:7.1f} µs/call  server CPU {row['cpu_us'] or 0:6.1f} µs/call"
                     f"  err {errors}")
        except Exception as e:  # noqa: BLE001
            row["problem"] = str(e)[:300]
            self.log(f"  client {label} {era} {in_flight}: ERROR {e}")
        finally:
            if client is not None:
                client.close()
            server.stop()
        return row

    # -- all of it
    def run(self):
        a = self.args
        conc = [int(c) for c in a.conns.split(",")]
        cases = set(a.cases.split(","))
        if "http" in cases or "2026" in cases:
            self.case_2026(conc)
        if "http" in cases or "2025" in cases:
            self.case_2025(conc)
        if "signals" in cases:
            self.case_signals(a.signal_rounds)
        if "list" in cases:
            self.case_tools_list(16)
        if "sessions" in cases:
            self.case_sessions([int(x) for x in a.sessions.split(",")])
        if "stdio" in cases:
            self.case_stdio(a.stdio_requests, a.stdio_window)
        if "growth" in cases:
            first, total = (int(x) for x in a.growth.split(","))
            self.case_growth(first, total, 16)
        if "client" in cases:
            self.case_client([int(x) for x in a.client_in_flight.split(",")], a.client_passes)


def echo26(url: str, accept: str) -> tuple[list, str, str | None]:
    """The 2026 `tools/call` of `echo` as wrk sends it, accepting `accept`, checked once
    against the server at `url`: the requests, the answer's content type, and what was wrong
    with it, if anything."""
    h = headers26("tools/call", "echo", accept)
    ctype, problem = check_echo(url, call26(), h)
    return [(h, call26())], ctype, problem


def prepare_check_again(server: Server, reqs) -> tuple[str, str | None]:
    h, b = reqs[0]
    try:
        status, hdrs, msgs = Client(server.url).post(b, h)
    except Exception as e:  # noqa: BLE001
        return "?", str(e)
    r = the_result(msgs)
    if status != 200 or r is None or "result" not in r:
        return hdrs.get("content-type", "?"), f"HTTP {status} {msgs!r:.120}"
    return hdrs.get("content-type", "?"), None


def stdio_pipeline(server: Server, n: int, window: int, timeout: float) -> dict:
    """Handshake, then n tools/call requests with at most `window` unanswered, through the
    server's stdin and stdout. Counts answers (lines) and errors (lines with an "error")."""
    proc = server.proc
    out, inp = proc.stdout, proc.stdin
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": P25, "capabilities": {}, "clientInfo": {"name": "duet-bench", "version": "1"}}}
    inp.write((json.dumps(init) + "\n").encode())
    inp.flush()
    line = out.readline()
    if b'"result"' not in line:
        raise RuntimeError(f"initialize: {line[:200]!r}")
    inp.write((INITIALIZED + "\n").encode())
    inp.flush()
    # Pre-encoded requests, ids 1..n.
    reqs = [
        ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}\n' % i)
        .encode()
        for i in range(1, n + 1)
    ]
    os.set_blocking(out.fileno(), False)
    os.set_blocking(inp.fileno(), False)
    sel = selectors.DefaultSelector()
    sel.register(out.fileno(), selectors.EVENT_READ)
    in_fd, out_fd = inp.fileno(), out.fileno()
    sent = answered = errors = 0
    pending = b""
    partial = b""
    t0 = time.perf_counter()
    deadline = t0 + timeout
    writing = False
    while answered < n:
        if time.perf_counter() > deadline:
            break
        # Fill the window.
        if not pending and sent < n and sent - answered < window:
            k = min(n - sent, window - (sent - answered))
            pending = b"".join(reqs[sent:sent + k])
            sent += k
        if pending and not writing:
            sel.register(in_fd, selectors.EVENT_WRITE)
            writing = True
        for key, ev in sel.select(timeout=1.0):
            if key.fd == out_fd:
                try:
                    chunk = os.read(out_fd, 1 << 20)
                except BlockingIOError:
                    continue
                if not chunk:
                    raise RuntimeError("the server closed stdout")
                data = partial + chunk
                cut = data.rfind(b"\n") + 1
                complete, partial = data[:cut], data[cut:]
                answered += complete.count(b"\n")
                errors += complete.count(b'"error":')
            elif key.fd == in_fd:
                try:
                    w = os.write(in_fd, pending)
                    pending = pending[w:]
                except BlockingIOError:
                    pass
                if not pending:
                    sel.unregister(in_fd)
                    writing = False
    took = time.perf_counter() - t0
    sel.close()
    os.set_blocking(inp.fileno(), True)
    return {"answered": answered, "errors": errors, "rps": answered / took if took else 0.0, "seconds": took}


# ---------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------

CASE_TITLES = {
    "2026-json": "tools/call echo, 2026-07-28, JSON replies (`Accept: application/json`; rmcp insists on both types)",
    "2026-sse": "tools/call echo, 2026-07-28, SSE replies (`Accept: application/json, text/event-stream`)",
    "2025-session": "tools/call echo, 2025-11-25 in a session (one session per connection)",
    "2025-stateless": "tools/call echo, 2025-11-25 stateless (no initialize)",
    "tools-list": "tools/list with 200 tools, 2026-07-28 JSON, every page in turn, 16 connections "
                  "(vs faster peer: in whole listings/s)",
    "2026-json-own-core": "tools/call echo, 2026-07-28, JSON replies, 16 connections, load generator on its own core",
    "sessions": "Idle 2025-11-25 sessions (initialize + initialized, kept open)",
    "growth": "RSS growth under stateless 2025-11-25 tools/call (16 connections)",
    "client": "Clients: tools/call echo from duet's, rmcp's and the Python SDK's client to the same duet server "
              "(HTTP, 2026-07-28 and a 2025-11-25 session)",
}
# The HTTP load tables, in the order the results show them.
LOAD_CASES = ("2026-json", "2026-sse", "2026-json-own-core", "2025-session", "2025-stateless", "tools-list")
# The kinds whose rows are compared with the faster peer: duet, and duet from --baseline-bin.
DUETS = ("duet", "variant", "baseline")
# How rows sort within a table: duet first, duet with other options next, its baseline
# (--baseline-bin) next, then the references and peers.
RANK = {"duet": 0, "variant": 1, "baseline": 2, "ceiling": 3, "floor": 4, "peer": 5}


def client_of(server: str) -> tuple[str, str]:
    """The program and the era argument of a client case's row, from its server key ("duet-2026":
    ("duet", "2026"))."""
    key, era = server.split("-", 1)
    return key, era


def case_title(case: str, args) -> str:
    """The title of a case's table, and of its chart."""
    if case == "stdio":
        return (f"stdio pipeline: {args.stdio_requests:,} tools/call echo through one process, "
                f"{args.stdio_window} in flight")
    return CASE_TITLES[case]


def case_of_title(args) -> Callable[[str | None], str | None]:
    """The case a results section's table of that title measures (None: the run's description
    and its targets, which are no case's table)."""
    titles = {case_title(case, args): case for case in (*LOAD_CASES, "sessions", "stdio", "growth", "client")}
    titles[SIGNALS_TITLE] = "signals"
    return lambda title: titles.get(title)


def chart_name(prefix: str, case: str) -> str:
    """The file name of a case's chart (charts.py writes it, the results section links it)."""
    return f"{prefix}-{case}.svg"


def run_stamp(meta: dict) -> str:
    """A full run's charts' prefix: its date, as YYYY-MM-DD-HHMM."""
    return meta["date"].replace(" ", "-").replace(":", "")


def fmt_ms(us):
    return "—" if us is None else f"{us / 1000:.2f}"


def fmt_mib(kib):
    return "—" if kib is None else f"{kib / 1024:.1f}"


def fmt_rps(x):
    return "—" if x is None else f"{x:,.0f}"


def per_session(s):
    return "—" if s["per_session"] is None else f"{s['per_session']:.2f}"


def fmt_ratio(x):
    return "—" if x is None else f"{x:.2f}×"


def fmt_cpus(cpus):
    return f"CPU{'s' if len(cpus) > 1 else ''} {','.join(map(str, cpus))}"


def group(rows, **match):
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def summarize(rows: list[dict]) -> dict:
    """Medians over passes: {(case, server, conns): {...}}."""
    out = {}
    keys = sorted({(r["case"], r["server"], r.get("conns"), r.get("sessions")) for r in rows},
                  key=lambda k: tuple(str(x) for x in k))
    for case, server, conns, sessions in keys:
        rs = [r for r in rows if (r["case"], r["server"], r.get("conns"), r.get("sessions")) == (case, server, conns,
                                                                                                  sessions)]
        ok = [r for r in rs if "problem" not in r]
        s = {"label": rs[0]["label"], "kind": rs[0]["kind"], "runs": len(rs), "ok": len(ok),
             "problems": sorted({r["problem"] for r in rs if "problem" in r}),
             "ctype": next((r.get("ctype") for r in rs if r.get("ctype")), None),
             "cpus": next((r.get("cpus") for r in rs if r.get("cpus")), None),
             "era": next((r.get("era") for r in rs if r.get("era")), None)}
        for f in ("rps", "p50", "p99", "cpu_us", "hwm", "rss", "per_session", "before", "after", "growth", "rss_first",
                  "rss_total", "first", "total", "pages", "tools", "client_cpu_us"):
            s[f] = median([r.get(f) for r in ok])
        s["errors"] = sum(r.get("errors") or 0 for r in rs)
        out[(case, server, conns if conns is not None else sessions)] = s
    return out


def floor_note(summary: dict) -> list[str]:
    """How far the JSON floor (parse, echo, no MCP work) sits below the ceiling, and duet from it."""
    parts = []
    for conns in (16, 64):
        d, c, f = (summary.get(("2026-json", k, conns)) for k in ("duet", "ceiling", "floor"))
        if d and c and f and d["rps"] and c["rps"] and f["rps"]:
            parts.append(f"at {conns} connections the floor reaches {f['rps'] / c['rps']:.2f}× the ceiling "
                         f"and duet {d['rps'] / f['rps']:.2f}× the floor")
    if not parts:
        return []
    found = "; ".join(parts)
    return ["The JSON floor parses each body into a `serde_json::Value` and echoes its id and arguments, as a "
            "JSON-RPC server written the usual way does, and does no MCP work. "
            + found[0].upper() + found[1:] + ".", ""]


# The signals issue's variants of duet, what each turns on, and the most throughput it may cost;
# and the placements of its case.
SIGNALS_VARIANTS = {"duet-metrics": ("metrics on", 0.05), "duet-otlp": ("every span exported", 0.10)}
SIGNALS_CASES = ("signals", "signals-own-core")
SIGNALS_TITLE = "What the operating signals cost: 2026 JSON tools/call echo"


def signals_loss(rows: list[dict], case: str, variant: str, conns: int) -> dict | None:
    """The throughput `variant` loses against plain duet in a signals case: the median over
    rounds of 1 − variant/duet within the round, and a 95 % confidence interval of that median
    (the order statistics the binomial distribution gives, so no shape of the noise is
    assumed); None without rounds."""
    by_round: dict[int, dict[str, float]] = {}
    for r in rows:
        if r["case"] == case and r.get("conns") == conns and "problem" not in r and r.get("rps"):
            by_round.setdefault(r["pass"], {})[r["server"]] = r["rps"]
    losses = sorted(1 - runs[variant] / runs["duet"] for runs in by_round.values() if variant in runs and "duet" in runs)
    n = len(losses)
    if not n:
        return None
    half = 0.98 * math.sqrt(n)  # 1.96 standard deviations of Binomial(n, 1/2)
    low, high = max(0, math.floor(n / 2 - half)), min(n - 1, math.ceil(n / 2 + half) - 1)
    return {"median": statistics.median(losses), "low": losses[low], "high": losses[high], "rounds": n}


def markdown(bench: Bench, summary: dict, meta: dict, charts: dict) -> tuple[str, dict[str, list[list[str]]]]:
    """The results section of a run, and its targets by case (rows of target, measured, goal,
    verdict); charts: {case: markdown link} of the charts to show under the tables."""
    a = bench.args
    L = []
    L.append(f"## {meta['date']} — {meta['mode']} run")
    L.append("")
    note = a.note or "(no note given: pass --note '...')"
    L.append(f"- What changed: {note}")
    L.append(f"- duet: commit {meta['commit']}{' + uncommitted changes' if meta['dirty'] else ''}, "
             f"binary `{os.path.relpath(a.duet_bin, ROOT)}`")
    # Raw measurements from before --baseline-bin existed have no such argument.
    if getattr(a, "baseline_bin", None):
        L.append(f"- duet (before): binary `{a.baseline_bin}`, run as one more server in every case that runs duet")
    L.append(f"- Machine: {meta['cores']} cores ({meta['cpu']}), {meta['mem_gib']:.0f} GiB, Linux {meta['kernel']}")
    cases = set(a.cases.split(","))
    # Every case but the client case, which brings its own load (its client programs), runs wrk.
    uses_wrk = bool(cases - {"client"})
    if cases - {"signals", "client"}:
        L.append(f"- Load generator: {meta['wrk']} on the same cores as the server (1 thread at 1 connection, else 2), "
                 f"except in the own-core case; {a.duration:g} s per run after {a.warmup:g} s of warm-up, {a.passes} pass(es), servers interleaved "
                 f"and rotated; medians shown")
    elif "signals" in cases:
        L.append(f"- Load generator: {meta['wrk']}, placed and timed as the signals section says")
    if "client" in cases:
        L.append(f"- Clients: duet_client (this tree), rmcp {meta.get('rmcp_client', '?')} (the workspace's pin), "
                 f"Python SDK `mcp` {meta.get('python_mcp', '?')} (scripts/python-venv.sh), each its own process "
                 f"(bench/clients/) on the same cores as the duet server; {a.duration:g} s per run after "
                 f"{a.warmup:g} s of warm-up, {a.client_passes} pass(es), clients interleaved and rotated; medians "
                 "shown")
    if getattr(a, "servers", None):
        L.append(f"- Servers: only {', '.join(f'`{k}`' for k in a.servers.split(','))} (`--servers`)")
    if uses_wrk:
        L.append(f"- Peers: rmcp {meta['rmcp']}, tower-mcp {meta['tower']}, hyper {meta['hyper']} (ceiling and JSON "
                 "floor); built from crates.io by bench/run.sh")
    L.append(f"- Took {meta['took_s'] / 60:.1f} min" + (f"; load average {meta['load']}" if meta.get("load") else ""))
    if uses_wrk:
        L.append("- Errors: HTTP-level (connect/read/write/timeouts/non-2xx) counted by wrk; each case's reply is "
                 "checked for a JSON-RPC result before and after the load")
        L.append("- rmcp's default SSE replies are served by `axum::serve` without TCP_NODELAY, as rmcp documents it; "
                 "each such reply stalls ~40 ms (Nagle against delayed ACK), which its rows show")
    for n in bench.notes:
        L.append(f"- Note: {n}")
    L.append("")

    targets = []

    def peers_best(case, conns, field="rps", best=max):
        vals = [(s[field], s["label"]) for (c, sv, k), s in summary.items()
                if c == case and k == conns and s["kind"] == "peer" and s[field] is not None]
        return best(vals) if vals else (None, None)

    def chart(case):
        if case in charts:
            L.append(f"![{case_title(case, a).replace('`', '')}]({charts[case]})")
            L.append("")

    for case in LOAD_CASES:
        items = [(k, s) for k, s in summary.items() if k[0] == case]
        if not items:
            continue
        L.append(f"### {case_title(case, a)}")
        L.append("")
        extra = ""
        if case == "2026-sse":
            extra = " | vs own JSON"
        if case == "2026-json-own-core":
            extra = " | p99 vs better peer"
            cpus = next((s["cpus"] for _, s in items if s.get("cpus")), None)
            if cpus:
                L.append(f"The 2026 JSON case again, each server confined to {fmt_cpus(cpus['server'])} and wrk "
                         f"({cpus['wrk_threads']} thread{'s' if cpus['wrk_threads'] > 1 else ''}) to "
                         f"{fmt_cpus(cpus['wrk'])} (`sched_setaffinity`), the OTLP sink with wrk. On shared cores "
                         "every server's p99 at 16 "
                         "connections, the bare ceiling's included, is the scheduler slicing wrk's threads against "
                         "the server's; here p99 is the server's own.")
                L.append("")
        if case == "tools-list":
            extra = " | pages | tools | listings/s"
        L.append("| server | conns | reply | req/s | p50 ms | p99 ms | server CPU µs/req | peak RSS MiB | errors | "
                 f"vs ceiling | vs faster peer{extra} |")
        L.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
                 + ("---:|" if case in ("2026-sse", "2026-json-own-core") else "")
                 + ("---:|---:|---:|" if case == "tools-list" else ""))
        for (c, sv, conns), s in sorted(items, key=lambda kv: (kv[0][2], RANK[kv[1]["kind"]], kv[0][1])):
            ceil = summary.get((case, "ceiling", conns))
            vs_ceiling = s["rps"] / ceil["rps"] if ceil and ceil["rps"] and s["rps"] and s["kind"] != "ceiling" else None
            if case == "tools-list":
                # Peers page differently (rmcp sends all 200 at once): compare whole listings.
                per = [x["rps"] / x["pages"] for (c2, _, k2), x in items
                       if k2 == conns and x["kind"] == "peer" and x["rps"] and x.get("pages")]
                mine = s["rps"] / s["pages"] if s["rps"] and s.get("pages") else None
                vs_peer = mine / max(per) if per and mine and s["kind"] in DUETS else None
            else:
                best_peer, _ = peers_best(case, conns)
                vs_peer = s["rps"] / best_peer if best_peer and s["rps"] and s["kind"] in DUETS else None
            cells = [s["label"], str(conns), s["ctype"] or "—",
                     "—" if s["rps"] is None else f"{s['rps']:,.0f}", fmt_ms(s["p50"]), fmt_ms(s["p99"]),
                     "—" if s.get("cpu_us") is None else f"{s['cpu_us']:.1f}", fmt_mib(s["hwm"]), str(s["errors"]) + (f" ({'; '.join(s['problems'])})" if s["problems"] else ""),
                     fmt_ratio(vs_ceiling), fmt_ratio(vs_peer)]
            if case == "2026-sse":
                j = summary.get(("2026-json", sv, conns))
                cells.append(fmt_ratio(s["rps"] / j["rps"] if j and j["rps"] and s["rps"] else None))
            if case == "2026-json-own-core":
                best_p99, _ = peers_best(case, conns, "p99", min)
                cells.append(fmt_ratio(s["p99"] / best_p99 if best_p99 and s["p99"] and s["kind"] != "peer" else None))
            if case == "tools-list":
                pages = s.get("pages")
                tools = s.get("tools")
                cells += [str(int(pages)) if pages else "—", str(int(tools)) if tools else "—",
                          "—" if not (pages and s["rps"]) else f"{s['rps'] / pages:,.0f}"]
            L.append("| " + " | ".join(cells) + " |")
        L.append("")
        chart(case)
        if case == "2026-json":
            L += floor_note(summary)

    items = [(k, s) for k, s in summary.items() if k[0] in SIGNALS_CASES]
    if items:
        L.append(f"### {SIGNALS_TITLE}")
        L.append("")
        L.append("Plain duet, duet with `--metrics-addr` and duet with `--otlp-endpoint` (every span exported), "
                 "started once for each placement and kept up, then measured in turn for one second each, the "
                 "order rotating each round. A loss is the median over rounds of each round's 1 − variant/duet, "
                 "with its 95 % confidence interval.")
        L.append("")
        L.append("| placement | conns | server | rounds | req/s (median) | lost against duet | 95 % CI |")
        L.append("|---|---:|---|---:|---:|---:|---|")
        for (case, sv, conns), s in sorted(items, key=lambda kv: (SIGNALS_CASES.index(kv[0][0]), kv[0][2],
                                                                  RANK[kv[1]["kind"]], kv[0][1])):
            loss = signals_loss(bench.rows, case, sv, conns) if sv in SIGNALS_VARIANTS else None
            lost, ci = ("—", "—") if loss is None else (
                f"{loss['median'] * 100:.1f} %", f"{loss['low'] * 100:.1f} to {loss['high'] * 100:.1f} %")
            where = "own core" if case.endswith("own-core") else "shared cores"
            L.append(f"| {where} | {conns} | {s['label']} | {s['ok']} | {fmt_rps(s['rps'])} | {lost} | {ci} |")
        L.append("")

    # Sessions
    items = [(k, s) for k, s in summary.items() if k[0] == "sessions"]
    if items:
        L.append(f"### {case_title('sessions', a)}")
        L.append("")
        L.append("| server | sessions | RSS before MiB | RSS after MiB | KiB per session | peak RSS MiB | dead probes |")
        L.append("|---|---:|---:|---:|---:|---:|---:|")
        for (c, sv, n), s in sorted(items, key=lambda kv: (kv[0][2], RANK[kv[1]["kind"]], kv[0][1])):
            L.append(f"| {s['label']} | {n:,} | {fmt_mib(s['before'])} | {fmt_mib(s['after'])} | "
                     f"{per_session(s)} | {fmt_mib(s['hwm'])} | "
                     f"{s['errors']}{' (' + '; '.join(s['problems']) + ')' if s['problems'] else ''} |")
        L.append("")
        chart("sessions")

    items = [(k, s) for k, s in summary.items() if k[0] == "stdio"]
    if items:
        L.append(f"### {case_title('stdio', a)}")
        L.append("")
        L.append("| server | req/s | peak RSS MiB | errors | vs faster peer |")
        L.append("|---|---:|---:|---:|---:|")
        best, _ = peers_best("stdio", None)
        for (c, sv, _), s in sorted(items, key=lambda kv: (RANK[kv[1]["kind"]], kv[0][1])):
            vs = s["rps"] / best if best and s["rps"] and s["kind"] in DUETS else None
            L.append(f"| {s['label']} | {fmt_rps(s['rps'])} | {fmt_mib(s['hwm'])} | "
                     f"{s['errors']}{' (' + '; '.join(s['problems']) + ')' if s['problems'] else ''} | {fmt_ratio(vs)} |")
        L.append("")
        chart("stdio")

    items = [(k, s) for k, s in summary.items() if k[0] == "growth"]
    if items:
        L.append(f"### {case_title('growth', a)}")
        L.append("")
        L.append("| server | requests (first) | RSS MiB | requests (total) | RSS MiB | growth | errors |")
        L.append("|---|---:|---:|---:|---:|---:|---:|")
        for (c, sv, _), s in sorted(items, key=lambda kv: (RANK[kv[1]["kind"]], kv[0][1])):
            g = "—" if s["growth"] is None else f"{s['growth'] * 100:+.1f}%"
            L.append(f"| {s['label']} | {int(s['first'] or 0):,} | {fmt_mib(s['rss_first'])} | {int(s['total'] or 0):,} | "
                     f"{fmt_mib(s['rss_total'])} | {g} | {s['errors']}"
                     f"{' (' + '; '.join(s['problems']) + ')' if s['problems'] else ''} |")
        L.append("")

    items = [(k, s) for k, s in summary.items() if k[0] == "client"]
    if items:
        L.append(f"### {case_title('client', a)}")
        L.append("")
        L.append("Each client program connects to a fresh duet (`serve --fixtures testkit`, HTTP on 127.0.0.1), "
                 "then its callers (as many as in flight) call `echo` one after another for the run's seconds. "
                 "Client CPU is the client process's user plus system time over the measured run, all its "
                 "threads, from `/proc`; server CPU is duet's over the same run.")
        L.append("")
        L.append("| client | era | in flight | calls/s | client CPU µs/call | server CPU µs/call | errors | "
                 "vs rmcp's client | client CPU vs rmcp's |")
        L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        def order(item):
            (_, server, n), _ = item
            key, era = client_of(server)
            return list(CLIENT_ERAS).index(era), n, CLIENT_KEYS.index(key)

        for (c, sv, n), s in sorted(items, key=order):
            rm = summary.get(("client", f"rmcp-{client_of(sv)[1]}", n))
            vs = s["rps"] / rm["rps"] if rm and rm["rps"] and s["rps"] and s["kind"] in DUETS else None
            cpu_vs = (s["client_cpu_us"] / rm["client_cpu_us"]
                      if rm and rm["client_cpu_us"] and s["client_cpu_us"] and s["kind"] in DUETS else None)
            cpu = "—" if s["client_cpu_us"] is None else f"{s['client_cpu_us']:.1f}"
            server_cpu = "—" if s["cpu_us"] is None else f"{s['cpu_us']:.1f}"
            L.append(f"| {s['label']} | {s['era'] or '—'} | {n} | {fmt_rps(s['rps'])} | {cpu} | {server_cpu} | "
                     f"{s['errors']}{' (' + '; '.join(s['problems']) + ')' if s['problems'] else ''} | "
                     f"{fmt_ratio(vs)} | {fmt_ratio(cpu_vs)} |")
        L.append("")

    # Targets
    def get(case, server, k):
        return summary.get((case, server, k))

    def check(case, name, value, goal, ok):
        verdict = "not measured" if value is None else "met" if ok else "**missed**"
        targets.append((case, [name, "—" if value is None else value, goal, verdict]))

    for conns in (16, 64):
        d, c = get("2026-json", "duet", conns), get("2026-json", "ceiling", conns)
        if d and c and d["rps"] and c["rps"]:
            r = d["rps"] / c["rps"]
            check("2026-json", f"2026 JSON, {conns} conns, vs ceiling", f"{r:.2f}×", "≥ 0.75×", r >= 0.75)
        bp, _ = peers_best("2026-json", conns)
        if d and d["rps"] and bp:
            r = d["rps"] / bp
            check("2026-json", f"2026 JSON, {conns} conns, vs faster peer", f"{r:.2f}×", "≥ 1.5×", r >= 1.5)
    for conns in (16, 64):
        s, j = get("2026-sse", "duet", conns), get("2026-json", "duet", conns)
        if s and j and s["rps"] and j["rps"]:
            r = s["rps"] / j["rps"]
            check("2026-sse", f"2026 SSE vs duet JSON, {conns} conns", f"{r:.2f}×", "≥ 0.8×", r >= 0.8)
    d = get("2026-json", "duet", 16)
    bp99, _ = peers_best("2026-json", 16, "p99", min)
    if d and d["p99"] and bp99:
        r = d["p99"] / bp99
        check("2026-json", "p99 at 16 conns (2026 JSON) vs better peer", f"{d['p99'] / 1000:.2f} ms = {r:.2f}×",
              "≤ 0.5×", r <= 0.5)
    if "2026" in a.cases.split(",") or "http" in a.cases.split(","):
        d = get("2026-json-own-core", "duet", 16)
        bp99, _ = peers_best("2026-json-own-core", 16, "p99", min)
        r = d["p99"] / bp99 if d and d["p99"] and bp99 else None
        check("2026-json-own-core", "p99 at 16 conns, load generator on its own core (2026 JSON) vs better peer",
              None if r is None else f"{d['p99'] / 1000:.2f} ms = {r:.2f}×", "≤ 0.5×", r is not None and r <= 0.5)
    big = max((k[2] for k in summary if k[0] == "sessions" and k[1] == "duet"), default=None)
    if big:
        s = get("sessions", "duet", big)
        if s and s["per_session"] is not None:
            check("sessions", f"idle session at {big:,}", f"{s['per_session']:.2f} KiB", "≤ 6 KiB",
                  s["per_session"] <= 6)
    s = get("stdio", "duet", None)
    for key, what in (("rmcp", "rmcp stdio(), its documented default"), ("rmcp-pipes", "rmcp stdio_pipes()")):
        rm = get("stdio", key, None)
        if s and s["rps"] and rm and rm["rps"]:
            r = s["rps"] / rm["rps"]
            check("stdio", f"stdio vs {what}", f"{r:.2f}×", "≥ 1.5×", r >= 1.5)
    d, rm = get("tools-list", "duet", 16), get("tools-list", "rmcp", 16)
    if d and rm and d["rps"] and rm["rps"] and d.get("pages") and rm.get("pages"):
        r = (d["rps"] / d["pages"]) / (rm["rps"] / rm["pages"])
        check("tools-list", "tools/list of 200 tools, listings/s vs rmcp", f"{r:.2f}×", "≥ 5×", r >= 5)
    for case in ("2026-json", "2026-json-own-core"):
        d, f = get(case, "duet", 16), get(case, "floor", 16)
        where = "own core" if case.endswith("own-core") else "shared cores"
        if d and f and d.get("cpu_us") and f.get("cpu_us"):
            r = d["cpu_us"] / f["cpu_us"]
            check(case, f"2026 JSON server CPU per request vs the JSON floor, 16 conns, {where}", f"{r:.2f}×", "≤ 1×",
                  r <= 1)
        b = get(case, "duet-before", 16)
        if d and b and d.get("cpu_us") and b.get("cpu_us"):
            r = d["cpu_us"] / b["cpu_us"]
            check(case, f"2026 JSON server CPU per request vs duet (before), 16 conns, {where}", f"{r:.2f}×", "≤ 1×",
                  r <= 1)
    # The signals issue's overhead, each variant against plain duet.
    for variant, (what, goal) in SIGNALS_VARIANTS.items():
        for case, conns in ((SIGNALS_CASES[0], 16), (SIGNALS_CASES[0], 64), (SIGNALS_CASES[1], 16)):
            loss = signals_loss(bench.rows, case, variant, conns)
            if loss:
                where = ", own core" if case.endswith("own-core") else ""
                check("signals", f"2026 JSON throughput lost with {what}, {conns} conns{where} (median of "
                      f"{loss['rounds']} rounds; 95 % CI)", f"{loss['median'] * 100:.1f} % ({loss['low'] * 100:.1f} to "
                      f"{loss['high'] * 100:.1f})", f"≤ {goal * 100:.0f} %", loss["median"] <= goal)
    for era, version in CLIENT_ERAS.items():
        for n in sorted({k[2] for k in summary if k[0] == "client"}):
            d, rm = get("client", f"duet-{era}", n), get("client", f"rmcp-{era}", n)
            if d and rm and d["rps"] and rm["rps"]:
                r = d["rps"] / rm["rps"]
                check("client", f"duet's client vs rmcp's, calls/s, {version}, {n} in flight", f"{r:.2f}×", "≥ 1.5×",
                      r >= 1.5)
    s = get("growth", "duet", None)
    if s and s["growth"] is not None:
        check("growth", f"RSS growth {int(s['first'] or 0):,} → {int(s['total'] or 0):,} requests",
              f"{s['growth'] * 100:+.1f}%", "≤ +5%", s["growth"] <= 0.05)
    if targets:
        L.append("### Targets (ratios from this run)")
        L.append("")
        if getattr(a, "quick", False):
            L.append("Smoke run (seconds per case, a debug build of duet unless --release): these ratios say "
                     "nothing about the targets.")
            L.append("")
        L.append("| target | measured | goal | |")
        L.append("|---|---:|---|---|")
        L.extend("| " + " | ".join(row) + " |" for _, row in targets)
        L.append("")
    by_case: dict[str, list[list[str]]] = {}
    for case, row in targets:
        by_case.setdefault(case, []).append(row)
    return "\n".join(L), by_case


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def machine_meta(args, took: float) -> dict:
    def sh(*cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=20).stdout.strip()
        except Exception:  # noqa: BLE001
            return ""

    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) / 1024 / 1024
    except OSError:
        pass

    def version_in(lock, crate):
        try:
            with open(lock) as f:
                m = re.search(r'name = "%s"\nversion = "([^"]+)"' % re.escape(crate), f.read())
                return m.group(1) if m else "?"
        except OSError:
            return "?"

    def locked(peer, crate):
        return version_in(os.path.join(HERE, "peers", peer, "Cargo.lock"), crate)

    wrk_v = sh(args.wrk, "-v").splitlines()
    return {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "mode": "quick (smoke)" if args.quick else "full",
        "commit": sh("git", "rev-parse", "--short", "HEAD") or "?",
        "dirty": bool(sh("git", "status", "--porcelain", "--untracked-files=no")),
        "cores": os.cpu_count(),
        "cpu": cpu,
        "mem_gib": mem,
        "kernel": platform.release(),
        "wrk": (wrk_v[0].split(" [")[0] if wrk_v else "wrk"),
        "rmcp": locked("rmcp-echo", "rmcp"),
        "tower": locked("tower-mcp-echo", "tower-mcp"),
        "hyper": locked("hyper-ceiling", "hyper"),
        # The client case's rmcp is duet's workspace's (bench/clients/ is a member).
        "rmcp_client": version_in(os.path.join(ROOT, "Cargo.lock"), "rmcp"),
        "python_mcp": sh(args.client_python or "python3", "-c",
                         "import importlib.metadata as m; print(m.version('mcp'))") or "?",
        "took_s": took,
    }


def charts_dir(a) -> str | None:
    """Where a full run's charts go, to be linked from its results section and the summary:
    bench/charts/ beside RESULTS.md. None for a quick run, whose charts go into --out-dir unlinked."""
    return None if a.quick or not a.results else os.path.join(os.path.dirname(os.path.abspath(a.results)), "charts")


def chart_links(a, meta: dict) -> dict:
    """{case: link relative to the history directory, where the run's section goes} of a full
    run's charts that exist."""
    where = charts_dir(a)
    if where is None:
        return {}
    names = {case: chart_name(run_stamp(meta), case) for case in (*LOAD_CASES, "sessions", "stdio")}
    history = results.history_dir(a.results)
    return {case: os.path.relpath(os.path.join(where, name), history) for case, name in names.items()
            if os.path.exists(os.path.join(where, name))}


def draw_charts(a, raw: str, meta: dict) -> bool:
    """Runs charts.py on the run's raw measurements with --charts-python; False if it failed."""
    if not a.charts_python:
        print("charts: not drawn (no --charts-python; bench/run.sh gives its virtual environment's python)")
        return True
    where = charts_dir(a) or a.out_dir
    prefix = run_stamp(meta) if charts_dir(a) else os.path.splitext(os.path.basename(raw))[0]
    try:
        p = subprocess.run([a.charts_python, os.path.join(HERE, "charts.py"), raw, where, prefix],
                           capture_output=True, text=True, timeout=300)
    except OSError as e:
        print(f"charts: FAILED: {e}")
        return False
    if p.returncode != 0:
        print(f"charts: FAILED:\n{p.stdout}{p.stderr}")
        return False
    for path in p.stdout.split():
        print(f"chart:            {os.path.relpath(path, os.getcwd())}")
    return True


def write_results(bench: Bench, meta: dict) -> tuple[dict, bool]:
    """Writes the raw measurements, the charts and (for a full run) the results section into the
    history and the summary; returns the medians and whether the charts were drawn."""
    summary = summarize(bench.rows)
    a = bench.args
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    raw = os.path.join(a.out_dir, f"{'quick' if a.quick else 'full'}-{stamp}.json")
    with open(raw, "w") as f:
        json.dump({"meta": meta, "args": vars(a), "rows": bench.rows, "notes": bench.notes}, f, indent=1)
    charts_ok = draw_charts(a, raw, meta)
    section, targets = markdown(bench, summary, meta, chart_links(a, meta))
    if a.results:
        results.record(a.results, section, case_of_title(a), targets)
    print()
    print(section)
    print(f"raw measurements: {os.path.relpath(raw, os.getcwd())}")
    if a.results:
        print(f"results:          {os.path.relpath(a.results, os.getcwd())} (summary), "
              f"{os.path.relpath(results.history_file(a.results, meta['date']), os.getcwd())} (this run)")
    return summary, charts_ok


def render(raw: str) -> int:
    with open(raw) as f:
        d = json.load(f)
    fake = argparse.Namespace(args=argparse.Namespace(**d["args"]), notes=d["notes"], rows=d["rows"])
    section, _ = markdown(fake, summarize(d["rows"]), d["meta"], chart_links(fake.args, d["meta"]))
    print(section)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke mode: short runs, one pass, nothing in RESULTS.md")
    ap.add_argument("--duet-bin", required=True)
    ap.add_argument("--baseline-bin", metavar="PATH",
                    help='a second duet binary (an older build), run as one more server, "duet (before)", in '
                         "every case that runs duet")
    ap.add_argument("--peer-bin-dir", required=True)
    ap.add_argument("--wrk", default="wrk")
    ap.add_argument("--duration", type=float, help="seconds per measured run")
    ap.add_argument("--warmup", type=float, help="seconds of warm-up before each measured run (0: none)")
    ap.add_argument("--passes", type=int)
    ap.add_argument("--conns", help="comma-separated connection counts")
    ap.add_argument("--sessions", help="comma-separated idle session counts")
    ap.add_argument("--stdio-requests", type=int)
    ap.add_argument("--stdio-window", type=int, default=64)
    ap.add_argument("--growth", help="FIRST,TOTAL stateless requests for the RSS growth check")
    ap.add_argument("--signal-rounds", type=int, help="rounds of one second per server in the signals case")
    ap.add_argument("--cases", default="2026,2025,list,sessions,stdio,growth,signals,client",
                    help="subset of: 2026,2025,list,sessions,stdio,growth,signals,client (2026: JSON, SSE, and JSON "
                         "at 16 connections with the load generator on its own core; signals: what metrics and OTLP "
                         "export cost; client: duet's client against rmcp's and the Python SDK's)")
    ap.add_argument("--client-bin-dir", metavar="DIR",
                    help="where duet-client-echo and rmcp-client-echo (bench/clients/) were built, for the client case")
    ap.add_argument("--client-python", metavar="PATH",
                    help="a python with the Python SDK (`mcp`, scripts/python-venv.sh), for the client case")
    ap.add_argument("--client-in-flight", default="1,16", help="comma-separated calls in flight, for the client case")
    ap.add_argument("--client-passes", type=int, help="passes of the client case (default 3; quick: 1)")
    ap.add_argument("--servers", help="comma-separated keys of the servers the load cases run (duet, duet-metrics, "
                    "duet-otlp, duet-otlp-sampled, ceiling, floor, rmcp, tower, ...; default: all); duet's "
                    "baseline (--baseline-bin) runs with duet")
    ap.add_argument("--note", default="", help="what changed since the last run (goes into the run's section)")
    ap.add_argument("--results", help="the summary's markdown file; the run's section and figures go into history/ "
                                      "beside it (default: bench/RESULTS.md for full runs, none for quick runs)")
    ap.add_argument("--out-dir", default=os.path.join(HERE, ".out"))
    ap.add_argument("--charts-python", metavar="PATH",
                    help="a python with bench/requirements.txt installed, to draw the charts (charts.py); "
                         "none drawn without it")
    ap.add_argument("--render", metavar="RAW_JSON", help="print the results section of an earlier run's raw "
                                                          "measurements (bench/.out/*.json) and exit")
    if "--render" in sys.argv:
        i = sys.argv.index("--render")
        return render(sys.argv[i + 1])
    a = ap.parse_args()
    q = a.quick
    defaults = dict(duration=1 if q else 5, warmup=0 if q else 1, passes=1 if q else 2, conns="1,16,64",
                    sessions="100,1000" if q else "1000,10000", stdio_requests=5000 if q else 100000,
                    growth="2000,20000" if q else "20000,200000", signal_rounds=2 if q else 60,
                    client_passes=1 if q else 3)
    for k, v in defaults.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if a.results is None and not q:
        a.results = os.path.join(HERE, "RESULTS.md")

    def on_signal(signum, _frame):
        Server.stop_all()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    bench = Bench(a)
    try:
        bench.run()
    finally:
        Server.stop_all()
    meta = machine_meta(a, time.time() - bench.started)
    meta["load"] = f"{bench.load_start} at the start, {loadavg()} at the end"
    summary, charts_ok = write_results(bench, meta)
    bad = [k for k, s in summary.items() if s["ok"] == 0]
    if bad:
        print(f"\n{len(bad)} measurement(s) produced no result: " + ", ".join("/".join(map(str, k)) for k in bad))
    return 1 if bad or not charts_ok else 0


if __name__ == "__main__":
    sys.exit(main())
