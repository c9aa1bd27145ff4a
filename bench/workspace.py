#!/usr/bin/env python3
"""The workspace benchmark (issue 18): `duet serve --root TREE` against the reference
filesystem server (npm `@modelcontextprotocol/server-filesystem`, pinned in
bench/reference/) and against ripgrep and fd, side by side in one run, on a generated source
tree of 200,000 files (bench/workspace_tree.py: a `.git`, a `.gitignore`, ignored build
output). Started by `bench/run.sh --workspace`, which builds duet and installs the others
first; adds a "workspace" section to bench/history/ and brings the workspace case of
bench/RESULTS.md up to date (not with `--quick`).

Both servers run over stdio, as their users run them. What is measured, servers interleaved
and the order rotated between passes, medians over passes:

- spawn to the `initialize` answer (a fresh process each time);
- content search: duet's `search_files` from request to reply in an idle server, against
  `rg -n` timed alone, for a literal, a regular expression and a case-insensitive literal;
  the match sets (path and line) are compared with `rg --json`'s (the reference server
  has no content search);
- name search: duet's `find_files`, the reference's `search_files` (a glob) and `fd -g`,
  the sets compared;
- a listing of a 1,000-entry directory (`list_directory`), and duet's first page of
  `resources/list` (1,000 resources; the reference lists no resources);
- a 5 MB text file read: the reference's `read_text_file` in one call; duet's `read_file`
  returns at most 1 MiB per call, so in line ranges of 10,000 lines (6 calls);
- peak RSS (`VmHWM`) after all of that, and the inotify watches each server holds;
- CPU while a process appends to an ignored file 20 times a second (`*.log` in the tree's
  top directory, which is served and watched), and duet's rescans then (counted in its debug
  log).

Every process is stopped when the run ends; the generated tree is removed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import queue
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import results
import workspace_tree as gen
from replicas import commit

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOCOL = "2025-11-25"
RESCAN = "rescanning the workspace"
CONTENT_SEARCHES = [
    ("literal", {"pattern": gen.LITERAL, "literal": True}, ["-F"]),
    ("regex", {"pattern": r"fn\s+needle_\w+\("}, []),
    ("case-insensitive literal", {"pattern": "NEEDLE_literal", "literal": True, "case_insensitive": True}, ["-F", "-i"]),
]
NAME_GLOB = "*" + gen.TEST_SUFFIX
READ_LINES = 10_000
"""Lines per duet read_file call: 1,000,000 bytes, under its 1 MiB limit per read."""


class Stdio:
    """An MCP server over stdio: newline-delimited JSON-RPC on its stdin and stdout."""

    def __init__(self, label: str, argv: list[str], stderr=subprocess.DEVNULL):
        self.label = label
        self.spawned = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                     start_new_session=True)
        self.inbox: queue.Queue = queue.Queue()
        self.rid = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.inbox.put(json.loads(line))
            except ValueError:
                continue
        self.inbox.put(None)

    def send(self, message: dict):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict, timeout: float = 600) -> dict:
        self.rid += 1
        self.send({"jsonrpc": "2.0", "id": self.rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            message = self.inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            if message is None:
                raise RuntimeError(f"{self.label} exited during {method}")
            if message.get("id") == self.rid:
                if "error" in message:
                    raise RuntimeError(f"{self.label}: {method}: {message['error']}")
                return message["result"]

    def initialize(self) -> dict:
        result = self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                             "clientInfo": {"name": "duet-bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def call(self, tool: str, arguments: dict) -> dict:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{self.label}: {tool}: {result['content'][0].get('text', '')[:300]}")
        return result

    def timed(self, method: str, params: dict) -> tuple[float, dict]:
        started = time.perf_counter()
        result = self.request(method, params)
        return time.perf_counter() - started, result

    def cpu(self) -> float:
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def inotify_watches(self) -> int:
        count = 0
        for fd in os.listdir(f"/proc/{self.proc.pid}/fd"):
            try:
                if os.readlink(f"/proc/{self.proc.pid}/fd/{fd}") != "anon_inode:inotify":
                    continue
                with open(f"/proc/{self.proc.pid}/fdinfo/{fd}") as info:
                    count += sum(line.startswith("inotify wd:") for line in info)
            except OSError:
                continue
        return count

    def idle(self, quiet: float = 1.0, limit: float = 120.0):
        """Waits until the process has used no CPU for `quiet` seconds (its start-up work,
        such as duet's first walk of the tree, is done)."""
        deadline = time.monotonic() + limit
        last, since = self.cpu(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now = self.cpu()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def text_of(result: dict) -> str:
    return "".join(c.get("text", "") for c in result.get("content", []))


def timed_process(argv: list[str]) -> tuple[float, float, str]:
    """Runs a program to the end, its output read through a pipe: wall seconds, CPU
    seconds (user and system), and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{argv[0]} failed: {done.stderr[:300]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return took, cpu, done.stdout


def rg_places(rg: str, tree: str, flags: list[str], pattern: str) -> set[tuple[str, int]]:
    out = subprocess.run([rg, "--json", "--no-config", *flags, "-e", pattern, "."], cwd=tree,
                         capture_output=True, text=True, timeout=600).stdout
    found = set()
    for line in out.splitlines():
        event = json.loads(line)
        if event["type"] == "match":
            found.add((event["data"]["path"]["text"].removeprefix("./"), event["data"]["line_number"]))
    return found


class Run:
    def __init__(self, a):
        self.a = a
        self.rows: dict[str, list] = {}

    def add(self, key: str, value):
        self.rows.setdefault(key, []).append(value)

    def duet(self, *extra: str, stderr=subprocess.DEVNULL) -> Stdio:
        return Stdio("duet", [self.a.duet_bin, "serve", "--root", self.a.tree, *extra], stderr=stderr)

    def reference(self) -> Stdio:
        return Stdio("reference", [self.a.node, self.a.reference, self.a.tree])

    def initialize_times(self, runs: int):
        for n in range(runs):
            for make in ([self.duet, self.reference] if n % 2 == 0 else [self.reference, self.duet]):
                server = make()
                try:
                    server.initialize()
                    self.add(f"initialize/{server.label}", (time.perf_counter() - server.spawned) * 1000)
                finally:
                    server.stop()

    def content_search(self, duet: Stdio, pass_no: int):
        for name, args, flags in CONTENT_SEARCHES:
            rg_argv = [self.a.rg, "-n", "--no-config", *flags, "-e", args["pattern"], self.a.tree]
            order = ["rg", "duet"] if pass_no % 2 == 0 else ["duet", "rg"]
            for who in order:
                if who == "rg":
                    took, cpu, out = timed_process(rg_argv)
                    self.add(f"content/{name}/rg", {"s": took, "cpu": cpu, "lines": len(out.splitlines())})
                else:
                    cpu0 = duet.cpu()
                    took, result = duet.timed("tools/call", {"name": "search_files",
                                                             "arguments": {**args, "max_results": 5000}})
                    found = result.get("structuredContent", {})
                    self.add(f"content/{name}/duet", {"s": took, "cpu": duet.cpu() - cpu0,
                                                      "lines": len(found.get("matches", [])),
                                                      "truncated": found.get("truncated")})
            if pass_no == 0:
                result = duet.call("search_files", {**args, "max_results": 5000})
                places = {(m["path"], m["line"]) for m in result["structuredContent"]["matches"]}
                expected = rg_places(self.a.rg, self.a.tree, flags, args["pattern"])
                self.add(f"content/{name}/same", {"equal": places == expected, "duet": len(places),
                                                  "rg": len(expected)})

    def name_search(self, duet: Stdio, reference: Stdio, pass_no: int):
        fd_argv = [self.a.fd, "-t", "f", "-g", NAME_GLOB, self.a.tree]
        steps = {
            "fd": lambda: timed_process(fd_argv),
            "duet": lambda: self.timed_tool(duet, "find_files", {"glob": NAME_GLOB, "limit": 10000}),
            "reference": lambda: self.timed_tool(reference, "search_files",
                                                 {"path": self.a.tree, "pattern": "**/" + NAME_GLOB}),
        }
        names = list(steps)
        for who in names[pass_no % 3:] + names[:pass_no % 3]:
            took, cpu, out = steps[who]()
            self.add(f"name/{who}", {"s": took, "cpu": cpu})
            if pass_no == 0:
                self.add(f"name/{who}/found", sorted(self.relative(out, who)))

    def relative(self, out, who: str) -> list[str]:
        if who == "duet":
            return out["structuredContent"]["files"]
        lines = out if isinstance(out, str) else text_of(out)
        top = self.a.tree.rstrip("/") + "/"
        return [line.removeprefix(top) for line in lines.splitlines() if line.strip()]

    def timed_tool(self, server: Stdio, tool: str, arguments: dict):
        cpu0 = server.cpu()
        took, result = server.timed("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{server.label}: {tool}: {text_of(result)[:300]}")
        return took, server.cpu() - cpu0, result

    def listing(self, duet: Stdio, reference: Stdio):
        wide = os.path.join(self.a.tree, "wide")
        took, _, result = self.timed_tool(duet, "list_directory", {"path": "wide", "limit": 1000})
        assert len(result["structuredContent"]["entries"]) == gen.WIDE_ENTRIES, result["structuredContent"]
        self.add("list/duet", took)
        took, _, result = self.timed_tool(reference, "list_directory", {"path": wide})
        assert len(text_of(result).splitlines()) == gen.WIDE_ENTRIES
        self.add("list/reference", took)
        took, page = duet.timed("resources/list", {})
        self.add("resources/duet", {"s": took, "resources": len(page["resources"])})

    def read(self, duet: Stdio, reference: Stdio):
        path = os.path.join(self.a.tree, gen.BIG_FILE)
        lines = gen.BIG_BYTES // gen.BIG_LINE_BYTES
        started, got = time.perf_counter(), 0
        for start in range(1, lines + 1, READ_LINES):
            end = min(start + READ_LINES - 1, lines)
            result = duet.call("read_file", {"path": gen.BIG_FILE, "start_line": start, "end_line": end})
            got += len(text_of(result).encode())
        self.add("read/duet", {"s": time.perf_counter() - started, "bytes": got})
        took, _, result = self.timed_tool(reference, "read_text_file", {"path": path})
        self.add("read/reference", {"s": took, "bytes": len(text_of(result).encode())})

    def appending(self, seconds: float):
        """CPU of each server while a process appends to an ignored file 20 times a second;
        duet's rescans meanwhile."""
        log = os.path.join(self.a.tree, "appended.log")
        scratch = tempfile.NamedTemporaryFile(prefix="duet-bench-log-", suffix=".txt", delete=False)
        servers = [self.duet("--log-level", "debug", stderr=scratch), self.reference()]
        try:
            for server in servers:
                server.initialize()
                server.idle()
            cpu0 = [s.cpu() for s in servers]
            end = time.monotonic() + seconds
            writes = 0
            while time.monotonic() < end:
                with open(log, "a") as f:
                    f.write(f"line {writes}\n")
                writes += 1
                time.sleep(0.05)
            time.sleep(0.5)  # past duet's watcher's quiet time
            for server, before in zip(servers, cpu0):
                self.add(f"append/{server.label}", {"cpu": server.cpu() - before, "seconds": seconds,
                                                    "writes": writes})
        finally:
            for server in servers:
                server.stop()
            with open(scratch.name) as f:
                self.add("append/rescans", f.read().count(RESCAN))
            os.unlink(scratch.name)
            os.unlink(log)

    def sessions(self, passes: int):
        duet, reference = self.duet(), self.reference()
        try:
            for server in (duet, reference):
                server.initialize()
                server.idle()
            self.add("watches/duet", duet.inotify_watches())
            self.add("watches/reference", reference.inotify_watches())
            for pass_no in range(passes):
                print(f"  pass {pass_no + 1}/{passes}", file=sys.stderr)
                self.content_search(duet, pass_no)
                self.name_search(duet, reference, pass_no)
                self.listing(duet, reference)
                self.read(duet, reference)
            self.add("rss/duet", duet.peak_rss_kib())
            self.add("rss/reference", reference.peak_rss_kib())
        finally:
            duet.stop()
            reference.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duet-bin", required=True)
    p.add_argument("--reference", required=True, help="the reference server's dist/index.js")
    p.add_argument("--node", default=shutil.which("node") or "node")
    p.add_argument("--rg", default="/usr/bin/rg")
    p.add_argument("--fd", default="/usr/bin/fdfind")
    p.add_argument("--files", type=int, default=200_000, help="served files in the generated tree")
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--starts", type=int, default=5, help="spawns per server for the initialize time")
    p.add_argument("--append-seconds", type=float, default=10.0)
    p.add_argument("--scratch", default=None, help="where the tree is generated (removed afterwards)")
    p.add_argument("--quick", action="store_true", help="2,000 files, one pass; no RESULTS.md")
    p.add_argument("--note", default="")
    a = p.parse_args()
    if a.quick:
        a.files, a.passes, a.starts, a.append_seconds = 2_000, 1, 1, 1.0
    took = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="duet-workspace-", dir=a.scratch)
    a.tree = os.path.join(scratch, "tree")
    run = Run(a)
    try:
        print(f"==> generating a tree of {a.files:,} files in {a.tree}", file=sys.stderr)
        made = gen.generate(a.tree, a.files, a.files // 10)
        subprocess.run([a.rg, "--files", a.tree], capture_output=True)  # into the page cache
        print("==> spawn to initialize", file=sys.stderr)
        run.initialize_times(a.starts)
        print("==> searches, listings, reads", file=sys.stderr)
        run.sessions(a.passes)
        print("==> appending to an ignored file", file=sys.stderr)
        run.appending(a.append_seconds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    raw = {"args": {k: v for k, v in vars(a).items()}, "tree": made, "rows": run.rows}
    out_dir = os.path.join(HERE, ".out")
    os.makedirs(out_dir, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    with open(os.path.join(out_dir, f"workspace-{stamp}.json"), "w") as f:
        json.dump(raw, f, indent=1)
    section = render(a, run.rows, made, time.monotonic() - took)
    print(section)
    if not a.quick:
        results.record(os.path.join(HERE, "RESULTS.md"), section, lambda _title: "workspace")
    return 0 if all(r["equal"] for k, rows in run.rows.items() if k.endswith("/same") for r in rows) else 1


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def render(a, rows: dict, made: dict, took: float) -> str:
    ms = lambda s: f"{s * 1000:,.1f}" if s is not None else "–"  # noqa: E731
    ratio = lambda x, y: f"{x / y:.2f}×" if x and y else "–"  # noqa: E731
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    lines = [f"## {now} — workspace", ""]
    if a.note:
        lines.append(f"- What changed: {a.note}")
    lines += [
        f"- duet: commit {commit()}, binary `{a.duet_bin}`; reference: `{a.reference}` (node {node_version(a.node)})",
        f"- Tree: {made['served']:,} served files (and {made['ignored']:,} ignored or in `.git`), generated by "
        f"bench/workspace_tree.py; {a.passes} passes, medians; {os.cpu_count()} cores shared by everything",
        f"- Took {took / 60:.1f} min",
        "",
        "| measurement | duet | reference | rg / fd | duet vs |",
        "|---|---:|---:|---:|---:|",
    ]
    init_d, init_r = med(rows.get("initialize/duet", [])), med(rows.get("initialize/reference", []))
    lines.append(f"| spawn to `initialize` answer, ms | {init_d:,.1f} | {init_r:,.1f} | | "
                 f"{ratio(init_d, init_r)} the reference |")
    for name, _, _ in CONTENT_SEARCHES:
        d = med(r["s"] for r in rows.get(f"content/{name}/duet", []))
        g = med(r["s"] for r in rows.get(f"content/{name}/rg", []))
        dc = med(r["cpu"] for r in rows.get(f"content/{name}/duet", []))
        gc = med(r["cpu"] for r in rows.get(f"content/{name}/rg", []))
        same = rows.get(f"content/{name}/same", [{}])[0]
        lines.append(f"| content search, {name} ({same.get('duet', '?')} lines; same as rg: "
                     f"{'yes' if same.get('equal') else 'NO'}), ms (CPU ms) | {ms(d)} ({ms(dc)}) | n/a | "
                     f"{ms(g)} ({ms(gc)}) | {ratio(d, g)} rg |")
    d, f_, r = (med(x["s"] for x in rows.get(f"name/{w}", [])) for w in ("duet", "fd", "reference"))
    found = {w: rows.get(f"name/{w}/found", [[]])[0] for w in ("duet", "fd", "reference")}
    lines.append(f"| name search `{NAME_GLOB}` ({len(found['duet'])} files; same as fd: "
                 f"{'yes' if found['duet'] == found['fd'] else 'NO'}, as the reference: "
                 f"{'yes' if found['duet'] == found['reference'] else 'NO'}), ms | {ms(d)} | {ms(r)} | {ms(f_)} | "
                 f"{ratio(d, f_)} fd, {ratio(d, r)} the reference |")
    d, r = med(rows.get("list/duet", [])), med(rows.get("list/reference", []))
    lines.append(f"| list a directory of {gen.WIDE_ENTRIES:,} entries, ms | {ms(d)} | {ms(r)} | | {ratio(d, r)} |")
    page = rows.get("resources/duet", [{}])
    lines.append(f"| `resources/list`, first page ({page[0].get('resources', '?')} resources), ms | "
                 f"{ms(med(x['s'] for x in page))} | n/a | | |")
    d = med(x["s"] for x in rows.get("read/duet", []))
    r = med(x["s"] for x in rows.get("read/reference", []))
    lines.append(f"| read a 5 MB text file, ms (duet: {-(-gen.BIG_BYTES // gen.BIG_LINE_BYTES // READ_LINES)} "
                 f"`read_file` calls of {READ_LINES:,} lines) | {ms(d)} | {ms(r)} | | {ratio(d, r)} |")
    rd, rr = med(rows.get("rss/duet", [])), med(rows.get("rss/reference", []))
    lines.append(f"| peak RSS after all of the above, MiB | {rd / 1024:.1f} | {rr / 1024:.1f} | | {ratio(rd, rr)} |")
    lines.append(f"| inotify watches | {med(rows.get('watches/duet', []))} | {med(rows.get('watches/reference', []))} "
                 "| | |")
    ad, ar = rows.get("append/duet", [{}])[0], rows.get("append/reference", [{}])[0]
    rescans = rows.get("append/rescans", [None])[0]
    lines.append(f"| CPU while a file ignored by `*.log` is appended to 20×/s for {ad.get('seconds', 0):.0f} s, "
                 f"ms (duet's rescans: {rescans}) | {ms(ad.get('cpu'))} | {ms(ar.get('cpu'))} | | |")
    content = [med(r["s"] for r in rows.get(f"content/{n}/duet", [])) / med(r["s"] for r in rows.get(f"content/{n}/rg", []))
               for n, _, _ in CONTENT_SEARCHES]
    name_ratio = (d_n / f_n) if (d_n := med(x["s"] for x in rows.get("name/duet", []))) and (
        f_n := med(x["s"] for x in rows.get("name/fd", []))) else None
    targets = [
        ("`initialize` within 20 ms", f"{init_d:.1f} ms", init_d <= 20),
        ("content search ≤ 1.2× rg, same matches", ", ".join(f"{c:.2f}×" for c in content),
         all(c <= 1.2 for c in content) and all(rows.get(f"content/{n}/same", [{}])[0].get("equal")
                                                  for n, _, _ in CONTENT_SEARCHES)),
        ("name search ≤ 1.2× fd", f"{name_ratio:.2f}×" if name_ratio else "–", bool(name_ratio and name_ratio <= 1.2)),
        ("no rescan for ignored writes", str(rescans), rescans == 0),
        ("peak RSS ≤ half the reference's", ratio(rd, rr), bool(rd and rr and rd <= rr / 2)),
    ]
    lines += ["", "| target | measured | met |", "|---|---:|:---:|"]
    lines += [f"| {t} | {m} | {'yes' if ok else 'no'} |" for t, m, ok in targets]
    lines.append("")
    return "\n".join(lines)


def node_version(node: str) -> str:
    return subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
