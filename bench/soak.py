#!/usr/bin/env python3
"""A soak of duet over HTTP: mixed load of both eras for a given time, sampling the server's
memory and descriptors, to show they stay flat. Not part of CI (it runs for minutes); the
hardening issue records a 30-minute run in bench/SOAK.md.

    python3 bench/soak.py --duet target/release/duet --minutes 30

The load, one thread each, runs without pause for the whole time:
- 2026-07-28 tools/call echo on one keep-alive connection;
- handshake-era sessions opened, used and then either deleted or abandoned to the idle reaper;
- 2026 listen streams (subscriptions/listen) opened, held a moment and dropped;
- multi round-trip calls (refund_order: input_required, then the retry with the user's answer
  and the sealed requestState), over a fixed set of orders;
- cancellations: a 2026 slow call whose client goes away after the first event, and a slow
  call in a session cancelled by notifications/cancelled.
Every few seconds the sampler reads the server's VmRSS and open descriptors from /proc. The
summary compares the last fifth of the run with the fifth after the first (the warm-up).
Standard library only; the server is started on 127.0.0.1 and stopped by its PID at the end.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import random
import subprocess
import sys
import threading
import time

P26 = "2026-07-28"
P25 = "2025-11-25"
META = {
    "io.modelcontextprotocol/protocolVersion": P26,
    "io.modelcontextprotocol/clientInfo": {"name": "duet-soak", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
JSON_ONLY = "application/json"
BOTH = "application/json, text/event-stream"


class Server:
    """`duet serve --fixtures testkit --transport http` on a free loopback port."""

    def __init__(self, duet: str, idle_timeout: int):
        argv = [duet, "serve", "--fixtures", "testkit", "--transport", "http", "--host", "127.0.0.1",
                "--port", "0", "--session-idle-timeout", str(idle_timeout)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            if "listening on http://" in line:
                # Up to a space, or the quote closing a `--log-format json` line's message.
                address = line.split("listening on http://", 1)[1].split('"', 1)[0].strip().removesuffix("/mcp")
                self.host, port = address.rsplit(":", 1)
                self.port = int(port)
                break
        else:
            raise SystemExit("duet serve ended before listening")
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def sample(self) -> tuple[int, int]:
        """Resident memory in KiB and open descriptors."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return rss, len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Load:
    """The load's threads, their counts, and when to stop."""

    def __init__(self, server: Server, until: float):
        self.server, self.until = server, until
        self.counts: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.lock = threading.Lock()

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.server.host, self.server.port, timeout=30)

    def count(self, what: str, ok: bool = True):
        with self.lock:
            table = self.counts if ok else self.errors
            table[what] = table.get(what, 0) + 1

    def run(self, name: str, step):
        """Runs `step` until the end; a failed step is counted and the connection renewed."""
        conn = self.connection()
        while time.time() < self.until:
            try:
                step(conn)
                self.count(name)
            except (OSError, http.client.HTTPException, ValueError, KeyError) as e:
                self.count(f"{name}: {type(e).__name__}", ok=False)
                conn.close()
                conn = self.connection()
                time.sleep(0.05)
        conn.close()


def post(conn, body: dict, headers: dict) -> tuple[int, dict, bytes]:
    conn.request("POST", "/mcp", json.dumps(body), {"Content-Type": "application/json", **headers})
    response = conn.getresponse()
    return response.status, dict(response.getheaders()), response.read()


def headers26(method: str, name: str | None = None, accept: str = JSON_ONLY) -> dict:
    h = {"Accept": accept, "MCP-Protocol-Version": P26, "Mcp-Method": method}
    if name:
        h["Mcp-Name"] = name
    return h


def call26(rid, name: str, arguments: dict, **extra) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": META, **extra}}


def expect(status: int, want: int, what: str):
    if status != want:
        raise ValueError(f"{what}: HTTP {status}")


def echo(conn):
    status, _, body = post(conn, call26(1, "echo", {"text": "hi"}), headers26("tools/call", "echo"))
    expect(status, 200, "echo")
    json.loads(body)["result"]


def session(conn):
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": P25, "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}}
    status, headers, _ = post(conn, init, {"Accept": BOTH})
    expect(status, 200, "initialize")
    sid = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
    h = {"Accept": BOTH, "Mcp-Session-Id": sid, "MCP-Protocol-Version": P25}
    expect(post(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, h)[0], 202, "initialized")
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "s"}}}
    expect(post(conn, call, {**h, "Accept": JSON_ONLY})[0], 200, "session call")
    if random.random() < 0.5:
        conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": P25})
        response = conn.getresponse()
        response.read()
        expect(response.status, 200, "delete")


def listen(_conn):
    conn = http.client.HTTPConnection(*_address(_conn), timeout=30)
    try:
        body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
                "params": {"notifications": {"toolsListChanged": True}, "_meta": META}}
        conn.request("POST", "/mcp", json.dumps(body),
                     {"Content-Type": "application/json", **headers26("subscriptions/listen", accept=BOTH)})
        response = conn.getresponse()
        expect(response.status, 200, "listen")
        response.fp.read1(256)
        time.sleep(random.uniform(0.2, 1.5))
    finally:
        conn.close()


def refund(conn):
    order = f"SOAK-{random.randrange(100)}"
    args = {"order_id": order, "amount_cents": 25000}
    h = headers26("tools/call", "refund_order")
    status, _, body = post(conn, call26(1, "refund_order", args), h)
    expect(status, 200, "refund")
    asked = json.loads(body)["result"]
    if asked.get("resultType") != "input_required":
        raise ValueError(f"refund did not ask: {asked}")
    answers = {"confirm": {"action": "accept", "content": {"ok": True}}}
    retry = call26(2, "refund_order", args, inputResponses=answers, requestState=asked["requestState"])
    status, _, body = post(conn, retry, h)
    expect(status, 200, "refund retry")
    json.loads(body)["result"]["structuredContent"]["refund_id"]


def cancel(conn):
    # 2026: the client goes away after the first event; the server cancels the call.
    gone = http.client.HTTPConnection(*_address(conn), timeout=30)
    try:
        body = call26(1, "slow", {"steps": 50})
        gone.request("POST", "/mcp", json.dumps(body),
                     {"Content-Type": "application/json", **headers26("tools/call", "slow", accept=BOTH)})
        response = gone.getresponse()
        expect(response.status, 200, "slow")
        response.fp.read1(64)
    finally:
        gone.close()
    # Handshake era: a slow call in a session, cancelled by a notification on another connection.
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": P25, "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}}
    status, headers, _ = post(conn, init, {"Accept": BOTH})
    expect(status, 200, "initialize")
    sid = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
    h = {"Accept": BOTH, "Mcp-Session-Id": sid, "MCP-Protocol-Version": P25}
    post(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
    slow = http.client.HTTPConnection(*_address(conn), timeout=30)
    try:
        call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "slow", "arguments": {"steps": 50}}}
        slow.request("POST", "/mcp", json.dumps(call), {"Content-Type": "application/json", **h})
        time.sleep(0.05)
        cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
        expect(post(conn, cancelled, h)[0], 202, "cancelled")
        slow.getresponse().read()
    finally:
        slow.close()
    conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": P25})
    conn.getresponse().read()


def _address(conn: http.client.HTTPConnection) -> tuple[str, int]:
    return conn.host, conn.port


def flatness(samples: list[tuple], column: int) -> tuple[float, float, float]:
    """Median of the fifth after warm-up, of the last fifth, and the growth between them."""
    fifth = max(1, len(samples) // 5)
    early = sorted(s[column] for s in samples[fifth:2 * fifth])
    late = sorted(s[column] for s in samples[-fifth:])
    a, b = early[len(early) // 2], late[len(late) // 2]
    return a, b, (b - a) / a * 100 if a else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duet", default="target/release/duet")
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--every", type=float, default=10, help="seconds between samples")
    ap.add_argument("--idle-timeout", type=int, default=10, help="the server's --session-idle-timeout")
    ap.add_argument("--results", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "SOAK.md"))
    a = ap.parse_args()

    server = Server(a.duet, a.idle_timeout)
    started = time.time()
    load = Load(server, started + a.minutes * 60)
    workers = [threading.Thread(target=load.run, args=(name, step), daemon=True)
               for name, step in [("echo", echo), ("session", session), ("listen", listen),
                                  ("refund", refund), ("cancel", cancel)]]
    for w in workers:
        w.start()
    samples = []
    try:
        while time.time() < load.until:
            rss, fds = server.sample()
            with load.lock:
                done = sum(load.counts.values())
            samples.append((round(time.time() - started), rss, fds, done))
            print(f"[{samples[-1][0]:>5} s] RSS {rss / 1024:.1f} MiB, {fds} descriptors, {done} operations", flush=True)
            time.sleep(a.every)
        for w in workers:
            w.join(timeout=60)
        rss, fds = server.sample()
        samples.append((round(time.time() - started), rss, fds, sum(load.counts.values())))
    finally:
        server.stop()

    rss_a, rss_b, rss_growth = flatness(samples, 1)
    fd_a, fd_b, fd_growth = flatness(samples, 2)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    lines = [f"## {stamp} — {a.minutes:g} minutes", "",
             f"`{' '.join(sys.argv)}`; {subprocess.run([a.duet, '--version'], capture_output=True, text=True).stdout.strip()}, "
             f"session idle timeout {a.idle_timeout} s, a sample every {a.every:g} s.", "",
             "| | after warm-up (median of the 2nd fifth) | at the end (median of the last fifth) | growth |",
             "|---|---:|---:|---:|",
             f"| RSS | {rss_a / 1024:.1f} MiB | {rss_b / 1024:.1f} MiB | {rss_growth:+.1f}% |",
             f"| open descriptors | {fd_a} | {fd_b} | {fd_growth:+.1f}% |", "",
             "| operation | completed | failed |", "|---|---:|---:|"]
    for name in sorted(load.counts):
        failed = sum(n for k, n in load.errors.items() if k.startswith(name + ":"))
        lines.append(f"| {name} | {load.counts[name]:,} | {failed:,} |")
    if load.errors:
        lines += ["", "Failures: " + ", ".join(f"{k} ×{n}" for k, n in sorted(load.errors.items()))]
    lines += ["", "| s | RSS MiB | descriptors | operations |", "|---:|---:|---:|---:|"]
    step = max(1, len(samples) // 40)
    lines += [f"| {t} | {r / 1024:.1f} | {f} | {d:,} |" for t, r, f, d in samples[::step]]
    section = "\n".join(lines) + "\n\n"
    header = "# duet soak runs\n\nWritten by `bench/soak.py`; newest first.\n\n"
    old = open(a.results).read().removeprefix(header) if os.path.exists(a.results) else ""
    with open(a.results, "w") as f:
        f.write(header + section + old)
    print(section)


if __name__ == "__main__":
    main()
