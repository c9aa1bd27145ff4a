#!/usr/bin/env python3
"""The replicas benchmark (issue 16): duet alone against duet on a Redis backplane, and three
replicas behind nginx, on 2026 `tools/call`; the time one change takes to reach 1,000 listen
streams spread over the three replicas; and the memory of an idle listen stream. Started by
`bench/run.sh --replicas`, which builds duet and installs wrk, Redis and nginx first; adds a
section to bench/history/ and brings the replicas case of bench/RESULTS.md up to date.

Every process binds 127.0.0.1 on a free port and is stopped when the run ends. The listen
streams are raw HTTP/1.1 connections of this script's (asyncio, on the same cores).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import bench
import results
from bench import ACCEPT_JSON, Server, Spec, Wrk, duet_http, echo26, headers26

HERE = os.path.dirname(os.path.abspath(__file__))
NGINX_TEMPLATE = os.path.join(os.path.dirname(HERE), "tests", "interop", "nginx.conf")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port}")


class Processes:
    """Redis and nginx as this run starts them; stopped by stop()."""

    def __init__(self, scratch: str):
        self.scratch = scratch
        self.started: list[subprocess.Popen] = []

    def redis(self, binary: str) -> str:
        port = free_port()
        argv = [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
                "--dir", self.scratch, "--logfile", os.path.join(self.scratch, "redis.log")]
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.started.append(process)
        wait_for_port(port, process, "redis-server")
        return f"redis://127.0.0.1:{port}/0"

    def nginx(self, binary: str, upstreams: list[str]) -> str:
        port = free_port()
        servers = "\n".join(f"        server {u};" for u in upstreams)
        with open(NGINX_TEMPLATE) as f:
            conf = f.read().format(scratch=self.scratch, servers=servers, port=port)
        path = os.path.join(self.scratch, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        argv = [binary, "-p", self.scratch, "-c", path, "-e", os.path.join(self.scratch, "nginx-error.log")]
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.started.append(process)
        wait_for_port(port, process, "nginx")
        return f"http://127.0.0.1:{port}/mcp"

    def stop(self):
        for process in reversed(self.started):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


# -- listen streams, raw


def listen_request(host: str, port: int, rid: int) -> bytes:
    params = {"notifications": {"resourceSubscriptions": ["test://items/"]}, "_meta": bench.META26}
    body = bench.body("subscriptions/listen", params, rid).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {bench.P26}\r\n"
            f"Mcp-Method: subscriptions/listen\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


class Stream:
    """One open listen stream: the URIs of the updates it received, and when."""

    def __init__(self):
        self.arrivals: dict[str, float] = {}
        self.acked = asyncio.Event()
        self.arrived = asyncio.Event()

    async def run(self, url: str, rid: int):
        u = bench.urllib.parse.urlsplit(url)
        reader, writer = await asyncio.open_connection(u.hostname, u.port)
        writer.write(listen_request(u.hostname, u.port, rid))
        await writer.drain()
        self.writer = writer
        status = await reader.readline()
        if not status.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"listen stream {rid} refused: {status.decode(errors='replace').strip()}")
        while line := await reader.readline():
            if not line.startswith(b"data:"):
                continue
            message = json.loads(line[5:])
            if message.get("method") == "notifications/subscriptions/acknowledged":
                self.acked.set()
            elif message.get("method") == "notifications/resources/updated":
                self.arrivals[message["params"]["uri"]] = time.perf_counter()
                self.arrived.set()

    def close(self):
        self.writer.close()


async def open_streams(urls: list[str], n: int) -> tuple[list[Stream], list[asyncio.Task]]:
    streams = [Stream() for _ in range(n)]
    tasks = [asyncio.create_task(s.run(urls[i % len(urls)], i + 1)) for i, s in enumerate(streams)]
    acked = asyncio.gather(*(s.acked.wait() for s in streams))
    done, _ = await asyncio.wait([acked, *tasks], timeout=60, return_when=asyncio.FIRST_COMPLETED)
    for task in done:
        if task is not acked:
            await close_streams(streams, tasks)
            task.result()  # a stream that ended before its acknowledgement: its error
    if acked not in done:
        raise RuntimeError(f"{sum(s.acked.is_set() for s in streams)} of {n} listen streams acknowledged in 60 s")
    return streams, tasks


async def close_streams(streams: list[Stream], tasks: list[asyncio.Task]):
    for s in streams:
        s.close()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def touch(url: str, uri: str):
    body = bench.body("tools/call", {"name": "touch", "arguments": {"uri": uri}, "_meta": bench.META26})
    status, _, _ = bench.Client(url).post(body, headers26("tools/call", "touch", ACCEPT_JSON))
    assert status == 200, status


async def fan_out(replica_urls: list[str], n: int, trials: int) -> dict:
    """Opens n listen streams over the replicas, then `trials` times raises one change on a
    replica (in turn) and times its arrival on every stream."""
    streams, tasks = await open_streams(replica_urls, n)
    per_trial = []
    try:
        for k in range(trials):
            uri = f"test://items/fan-{k}"
            started = time.perf_counter()
            await asyncio.to_thread(touch, replica_urls[k % len(replica_urls)], uri)
            deadline = time.monotonic() + 10
            while any(uri not in s.arrivals for s in streams) and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            delays = sorted((s.arrivals[uri] - started) * 1000 for s in streams if uri in s.arrivals)
            per_trial.append({"received": len(delays), "p50": delays[len(delays) // 2],
                              "p99": delays[int(len(delays) * 0.99) - 1], "max": delays[-1]})
    finally:
        await close_streams(streams, tasks)
    return {"streams": n, "trials": per_trial}


async def idle_stream_memory(url: str, server: Server, n: int) -> dict:
    """RSS of `server` before and after n idle listen streams open on it."""
    await asyncio.sleep(1)
    before = server.status().get("VmRSS", 0)
    streams, tasks = await open_streams([url], n)
    await asyncio.sleep(2)
    after = server.status().get("VmRSS", 0)
    await close_streams(streams, tasks)
    return {"streams": n, "rss_before_kib": before, "rss_after_kib": after,
            "per_stream_bytes": (after - before) * 1024 / n}


# -- the run


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duet-bin", required=True)
    p.add_argument("--wrk", required=True)
    p.add_argument("--redis-bin", default="/usr/bin/redis-server")
    p.add_argument("--nginx-bin", default="/usr/sbin/nginx")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--conns", type=int, default=16)
    p.add_argument("--streams", type=int, default=1000)
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--quick", action="store_true", help="1 s per run, 1 pass, 100 streams; no RESULTS.md")
    p.add_argument("--note", default="")
    a = p.parse_args()
    if a.quick:
        a.seconds, a.passes, a.streams, a.trials = 1.0, 1, 100, 3
    took = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="duet-replicas-")
    procs = Processes(scratch)
    key = os.path.join(scratch, "state.key")
    with open(key, "w") as f:
        f.write(secrets.token_hex(32))
    paths = argparse.Namespace(duet=a.duet_bin)
    try:
        store = procs.redis(a.redis_bin)
        # Room for every listen stream on one server (the default cap is 512 connections;
        # duet_http turns the per-peer cap off, as every stream comes from this script).
        room = ["--max-connections", str(a.streams + 64)]
        shared = ["--store", store, "--state-key-file", key, *room]
        alone = Server(Spec("alone", "duet", duet_http(paths, *room), "duet"))
        on_redis = Server(Spec("redis", "duet --store redis://…", duet_http(paths, *shared), "variant"))
        replicas = [Server(Spec(f"r{i}", f"replica {i}", duet_http(paths, *shared), "variant")) for i in range(3)]
        behind = procs.nginx(a.nginx_bin, [bench.urllib.parse.urlsplit(alone.url).netloc])
        three = procs.nginx(a.nginx_bin, [bench.urllib.parse.urlsplit(r.url).netloc for r in replicas])
        configs = [
            ("one duet, direct", alone.url, [alone]),
            ("one duet with --store redis://…, direct", on_redis.url, [on_redis]),
            ("one duet behind nginx", behind, [alone]),
            ("three replicas on Redis behind nginx", three, replicas),
        ]
        wrk = Wrk(a.wrk, scratch)
        rows: dict[str, list] = {label: [] for label, _, _ in configs}
        for pass_no in range(a.passes):
            order = configs[pass_no % len(configs):] + configs[:pass_no % len(configs)]
            for label, url, servers in order:
                reqs, _, problem = echo26(url, ACCEPT_JSON)
                if problem:
                    raise RuntimeError(f"{label}: {problem}")
                cpu0 = sum(s.cpu_seconds() or 0 for s in servers)
                r = wrk.run(url, reqs, a.conns, a.seconds)
                cpu = sum(s.cpu_seconds() or 0 for s in servers) - cpu0
                r["server_cpu_us"] = cpu / r["requests"] * 1e6 if r["requests"] else None
                rows[label].append(r)
                print(f"  {label}: {r['rps']:,.0f} req/s, {r['errors']} errors", file=sys.stderr)
        fan = asyncio.run(fan_out([r.url for r in replicas], a.streams, a.trials))
        memory = asyncio.run(idle_stream_memory(alone.url, alone, a.streams))
    finally:
        Server.stop_all()
        procs.stop()
    section = render(a, rows, fan, memory, time.monotonic() - took)
    print(section)
    if not a.quick:
        results.record(os.path.join(HERE, "RESULTS.md"), section, lambda _title: "replicas")


def render(a, rows: dict, fan: dict, memory: dict, took: float) -> str:
    med = lambda xs: statistics.median(x for x in xs if x is not None)  # noqa: E731
    base = med(r["rps"] for r in rows["one duet, direct"])
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    lines = [f"## {now} — replicas", ""]
    if a.note:
        lines.append(f"- What changed: {a.note}")
    lines += [
        f"- duet: commit {commit()}, binary `{a.duet_bin}`",
        f"- Machine: {os.cpu_count()} cores; everything (wrk, Redis, nginx, the replicas, this script) shares them",
        f"- Load: wrk, {a.conns} connections, {a.seconds:.0f} s per run, {a.passes} passes interleaved; medians",
        f"- Took {took / 60:.1f} min",
        "",
        "### tools/call echo, 2026-07-28, JSON replies",
        "",
        "| server | req/s | p50 ms | p99 ms | server CPU µs/req | errors | vs one duet direct |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, runs in rows.items():
        rps = med(r["rps"] for r in runs)
        lines.append(f"| {label} | {rps:,.0f} | {med(r['p50'] for r in runs) / 1000:.2f} | "
                     f"{med(r['p99'] for r in runs) / 1000:.2f} | {med(r['server_cpu_us'] for r in runs):.1f} | "
                     f"{sum(r['errors'] for r in runs)} | {rps / base:.2f}× |")
    trials = fan["trials"]
    lines += [
        "",
        f"### One change to {fan['streams']} listen streams spread over three replicas ({len(trials)} changes)",
        "",
        "| | median over changes | worst change |",
        "|---|---:|---:|",
        f"| streams that got it | {med(t['received'] for t in trials):.0f} | {min(t['received'] for t in trials)} |",
        f"| p50 ms | {med(t['p50'] for t in trials):.1f} | {max(t['p50'] for t in trials):.1f} |",
        f"| p99 ms | {med(t['p99'] for t in trials):.1f} | {max(t['p99'] for t in trials):.1f} |",
        f"| last stream ms | {med(t['max'] for t in trials):.1f} | {max(t['max'] for t in trials):.1f} |",
        "",
        f"### Memory of idle listen streams (one duet, {memory['streams']} streams)",
        "",
        f"RSS {memory['rss_before_kib'] / 1024:.1f} MiB before, {memory['rss_after_kib'] / 1024:.1f} MiB with the "
        f"streams open: {memory['per_stream_bytes'] / 1024:.1f} KiB a stream.",
        "",
    ]
    return "\n".join(lines)


def commit() -> str:
    """The checked-out commit, and whether the tree has changes beside it."""
    run = lambda *cmd: subprocess.run(cmd, capture_output=True, text=True, cwd=HERE).stdout.strip()  # noqa: E731
    return run("git", "rev-parse", "--short", "HEAD") + (" + uncommitted changes" if run("git", "status", "--porcelain") else "")


if __name__ == "__main__":
    main()
