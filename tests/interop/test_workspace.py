"""The workspace layer (`duet serve --root DIR`) with the official Python SDK client (`mcp` 2.3.0).

Every test fills a directory under pytest's tmp_path, serves it with `duet serve --root DIR`
and talks to it over each connection:

- stdio (the SDK's stdio client spawns duet) and Streamable HTTP (conftest's `duet_factory`
  starts `duet serve --root DIR --transport http --port 0`);
- the handshake era (`mode="legacy"`, 2025-11-25) and 2026-07-28 (`mode="auto"`).

What is checked: resources (the listing, text and blob reads, reads through the root's
template), the file tools, `search_files` progress, cancellation and its agreement with
ripgrep on a generated tree (`rg --json` with the same options), change notifications
(`resources/subscribe` on the handshake era, `subscriptions/listen` on 2026-07-28), the
confinement of every path to the root, the client's roots narrowing what is served (and asked
again after `notifications/roots/list_changed`), the prompts with their path completion, and the
write tools of `duet serve --allow-write`, confirmed through the client's elicitation
callback (a real `elicitation/create` request on the handshake era, an `input_required`
result the SDK answers and retries on 2026-07-28).

Cancellation is checked on the server as well as on the client: duet's `rchar` in
/proc/PID/io (bytes it has read) must stop growing once a search is cancelled.

Every test starts its own duet and stops it; every wait is bounded.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import anyio
import pytest
from pydantic import TypeAdapter
from conftest import DUET_BIN, EVENT_DEADLINE, Connection, Inbox
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp_types import (
    AudioContent,
    PaginatedRequest,
    PaginatedRequestParams,
    Request,
    RequestParams,
    BlobResourceContents,
    CallToolResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    ListRootsResult,
    PromptReference,
    ResourceListChangedNotification,
    ResourceTemplateReference,
    ResourceUpdatedNotification,
    Root,
    TextContent,
    TextResourceContents,
)

pytestmark = pytest.mark.anyio

TEST_DEADLINE = 30.0
"""Seconds any one test body may take."""

READ_TIMEOUT = 10.0
"""The client's per-request read timeout, in seconds."""

CANCEL_DEADLINE = 2.0
"""Seconds the client may take to get control back after cancelling a call."""

SECRET = "TOP-SECRET-0f9c2d-outside-the-workspace"
"""The contents of the files just outside the root: no answer may ever contain it."""

PASSWD_MARK = "root:x:0:0"
"""What /etc/passwd holds; no answer may ever contain it either."""


# ---------------------------------------------------------------------------------------------
# Connections




STDIO_LEGACY = Connection("stdio", "legacy")
STDIO_AUTO = Connection("stdio", "auto")
HTTP_LEGACY = Connection("http", "legacy")
HTTP_AUTO = Connection("http", "auto")

ALL = {"stdio-legacy": STDIO_LEGACY, "stdio-auto": STDIO_AUTO, "http-legacy": HTTP_LEGACY, "http-auto": HTTP_AUTO}
LEGACY = {k: v for k, v in ALL.items() if not v.modern}
MODERN_CONNECTIONS = {k: v for k, v in ALL.items() if v.modern}


def connections(table: dict[str, Connection]):
    return pytest.mark.parametrize("conn", list(table.values()), ids=list(table))


@dataclass
class Served:
    """An entered SDK client, the process id of the duet it talks to, and what that duet
    has written to stderr so far."""

    client: Client
    pid: int
    stderr: Callable[[], str]


def duet_serving(root: Path) -> list[int]:
    """The process ids of the `duet serve` processes serving `root` (from /proc/PID/cmdline)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and os.fsencode(root) in argv:
            found.append(int(entry))
    return found


def rchar(pid: int) -> int:
    """The bytes process `pid` has read so far (files, pipes and sockets)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError(f"no rchar in /proc/{pid}/io")


@pytest.fixture
def connect(duet_factory, tmp_path):
    """`connect(conn, root, *flags, **options)`: an entered SDK client on a fresh
    `duet serve --root root *flags` (e.g. `--allow-write`).

    HTTP servers are started (and stopped at teardown) by conftest's `duet_factory`; a stdio
    server is spawned by the SDK's stdio client, which stops it when the client exits (its
    stderr goes to a file under tmp_path).
    """
    logs: list[Any] = []

    @asynccontextmanager
    async def open_client(conn: Connection, root: Path, *flags: str, **options: Any) -> AsyncIterator[Served]:
        pid: int | None = None
        if conn.transport == "stdio":
            path = tmp_path / f"duet-stdio-{len(logs)}.log"
            log = open(path, "w")  # noqa: SIM115 - closed below
            logs.append(log)
            params = StdioServerParameters(command=DUET_BIN, args=["serve", "--root", str(root), *flags])
            target: Any = stdio_client(params, errlog=log)
            stderr: Callable[[], str] = path.read_text
        else:
            server = duet_factory("--root", str(root), *flags, fixtures=None)
            target = server.url
            pid = server.process.pid
            stderr = server.stderr
        async with Client(target, mode=conn.mode, read_timeout_seconds=READ_TIMEOUT, **options) as client:
            assert client.protocol_version == conn.version
            if pid is None:
                [pid] = duet_serving(root)
            yield Served(client, pid, stderr)

    try:
        yield open_client
    finally:
        for log in logs:
            log.close()


# ---------------------------------------------------------------------------------------------
# The workspace


MAIN_PY = "".join(f"line {n}\n" for n in range(1, 11))
UTIL_PY = "def helper():\n    return 42\n"
README = "# Demo workspace\n\nFiles for the interop tests.\n"
GUIDE = "How to use the demo.\nSecond line of the guide.\n"
HIDDEN = "a hidden file\n"
IGNORED = "an ignored log line\n"
LOGO = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) + b"\x00\xff" * 64
"""A PNG signature and some bytes: NULs, invalid UTF-8, so binary."""

LISTED = {
    "README.md": "text/markdown",
    "data/logo.png": "image/png",
    "docs/guide.txt": "text/plain",
    "src/main.py": "text/plain",
    "src/util.py": "text/plain",
}
"""The files the resource list shows (not .gitignore, .hidden.txt or debug.log) and their MIME types."""


@dataclass
class Tree:
    """A populated root, and what lies just outside it."""

    root: Path
    """The root, with symbolic links resolved (the paths and URIs duet reports)."""
    outside: Path
    """A file next to the root, holding SECRET."""
    outside_dir: Path
    """A directory next to the root, holding secret.txt (SECRET)."""

    def uri(self, rel: str = "") -> str:
        """The `file://` URI duet gives `rel` (percent-encoded as duet encodes)."""
        path = self.root / rel if rel else self.root
        return "file://" + quote(str(path), safe="/-._~")

    @property
    def template(self) -> str:
        return f"{self.uri()}/{{+path}}"

    def expand(self, rel: str) -> str:
        """The root's template with `{+path}` expanded (reserved expansion keeps '/')."""
        return self.template.replace("{+path}", quote(rel, safe="/-._~"))


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    base = tmp_path.resolve()
    root = base / "root"
    for rel, text in {
        "README.md": README,
        "src/main.py": MAIN_PY,
        "src/util.py": UTIL_PY,
        "docs/guide.txt": GUIDE,
        ".hidden.txt": HIDDEN,
        "debug.log": IGNORED,
        ".gitignore": "*.log\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "data").mkdir()
    (root / "data" / "logo.png").write_bytes(LOGO)
    outside = base / "outside.txt"
    outside.write_text(SECRET + "\n")
    outside_dir = base / "outside_dir"
    outside_dir.mkdir()
    (outside_dir / "secret.txt").write_text(SECRET + "\n")
    return Tree(root=root, outside=outside, outside_dir=outside_dir)


def text_of(result: CallToolResult) -> str:
    """The text of a tool result's first content block."""
    content = result.content[0]
    assert isinstance(content, TextContent), content
    return content.text


def texts_of(result: CallToolResult) -> list[str]:
    out = []
    for content in result.content:
        assert isinstance(content, TextContent), content
        out.append(content.text)
    return out


async def all_resources(client: Client) -> list[Any]:
    """Every page of resources/list."""
    resources, cursor = [], None
    for _ in range(100):
        page = await client.list_resources(cursor=cursor)
        resources.extend(page.resources)
        cursor = page.next_cursor
        if cursor is None:
            return resources
    raise AssertionError("resources/list did not end within 100 pages")


def assert_no_leak(answer: Any) -> None:
    """Neither the outside files' contents nor /etc/passwd appear anywhere in an answer."""
    shown = repr(answer)
    if isinstance(answer, MCPError):
        shown += f" {answer.message} {answer.data!r}"
    assert SECRET not in shown, shown
    assert PASSWD_MARK not in shown, shown
    # Nor base64 of the secret (a blob read).
    assert base64.b64encode(SECRET.encode()).decode()[:24] not in shown, shown


# ---------------------------------------------------------------------------------------------
# 1. Resources


@connections(ALL)
async def test_resources_list_and_read(connect, conn: Connection, tree: Tree) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root) as served:
            client = served.client
            capabilities = client.server_capabilities
            assert capabilities.resources is not None
            assert capabilities.resources.subscribe is True
            assert capabilities.resources.list_changed is True

            resources = await all_resources(client)
            by_name = {r.name: r for r in resources}
            assert sorted(by_name) == sorted(LISTED), [r.name for r in resources]
            for name, mime in LISTED.items():
                resource = by_name[name]
                assert resource.uri == tree.uri(name), resource
                assert resource.mime_type == mime, resource
                assert resource.size == (tree.root / name).stat().st_size, resource

            [template] = (await client.list_resource_templates()).resource_templates
            assert template.uri_template == tree.template, template
            assert template.name == "root"

            # A text file.
            [readme] = (await client.read_resource(tree.uri("README.md"))).contents
            assert isinstance(readme, TextResourceContents), readme
            assert readme.uri == tree.uri("README.md")
            assert readme.mime_type == "text/markdown"
            assert readme.text == README

            # A binary file, as a base64 blob.
            [logo] = (await client.read_resource(tree.uri("data/logo.png"))).contents
            assert isinstance(logo, BlobResourceContents), logo
            assert logo.uri == tree.uri("data/logo.png")
            assert logo.mime_type == "image/png"
            assert base64.b64decode(logo.blob) == LOGO

            # Through the template: listed files, and a hidden one named explicitly.
            for rel, text in {"src/main.py": MAIN_PY, ".hidden.txt": HIDDEN}.items():
                uri = tree.expand(rel)
                [contents] = (await client.read_resource(uri)).contents
                assert isinstance(contents, TextResourceContents), (rel, contents)
                assert contents.text == text, rel
                assert contents.uri == uri

            # A file .gitignore excludes is not served, even when named.
            with pytest.raises(MCPError) as caught:
                await client.read_resource(tree.expand("debug.log"))
            assert "gitignore" in caught.value.error.message, caught.value.error
            assert IGNORED.strip() not in str(caught.value.error)

            # A file that does not exist, and a directory, are errors.
            for uri in (tree.expand("src/missing.py"), tree.uri("src")):
                with pytest.raises(MCPError) as caught:
                    await client.read_resource(uri)
                assert caught.value.code in (-32002, -32602), (uri, caught.value.error)


LARGE_FILES = 12_345
"""Files in the large tree: more than the 10,000 the listing once stopped at."""


def large_tree(base: Path, files: int = LARGE_FILES) -> tuple[Path, set[str]]:
    """A tree of `files` small files in directories of 100 (beside ignored and hidden ones),
    and the names the resource list must show."""
    root = base / "large"
    names = set()
    for n in range(files):
        rel = f"d{n // 100:03}/f{n % 100:02}.txt"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"{n}\n")
        names.add(rel)
    (root / ".gitignore").write_text("build/\n")
    for rel in ["build/out.txt", ".hidden/file.txt"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("not listed\n")
    return root, names


@pytest.fixture(scope="module")
def large(tmp_path_factory) -> tuple[Path, set[str]]:
    """One large tree for the module's tests that only read it."""
    return large_tree(tmp_path_factory.mktemp("large").resolve())


@connections(ALL)
async def test_resources_list_pages_the_whole_tree(connect, conn: Connection, large) -> None:
    """Past the 10,000 files the listing once stopped at: pages of 1,000 (the default) reach
    every file exactly once, each with its URI and size."""
    root, names = large
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, root) as served:
            pages, cursor, listed = 0, None, []
            while True:
                page = await served.client.list_resources(cursor=cursor)
                pages += 1
                assert len(page.resources) <= 1000
                listed.extend(page.resources)
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert pages == -(-LARGE_FILES // 1000), pages
            seen = [r.name for r in listed]
            assert len(seen) == len(set(seen)) == LARGE_FILES, len(seen)
            assert set(seen) == names
            last = listed[-1]
            assert last.uri == "file://" + quote(str(root / last.name), safe="/-._~")
            n = int(last.name[1:4]) * 100 + int(last.name[6:8])
            assert (last.name, last.size) == ("d123/f44.txt", len(f"{n}\n")), last
            # A cursor duet did not make is refused.
            with pytest.raises(MCPError) as caught:
                await served.client.list_resources(cursor="bm90IGEgY3Vyc29y")
            assert caught.value.code == -32602, caught.value.error


# ---------------------------------------------------------------------------------------------
# 2. The file tools

READ_TOOLS = {
    "list_directory",
    "directory_tree",
    "find_files",
    "search_files",
    "read_file",
    "read_multiple_files",
    "describe_file",
}


@connections(ALL)
async def test_file_tools(connect, conn: Connection, tree: Tree) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root) as served:
            client = served.client
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == READ_TOOLS
            for tool in tools.values():
                assert tool.annotations is not None and tool.annotations.read_only_hint is True, tool

            # list_directory: the top, then a subdirectory.
            listed = await client.call_tool("list_directory", {"path": "."})
            assert listed.is_error is False, listed
            top = listed.structured_content
            assert top is not None and top["path"] == "."
            entries = {e["name"]: e for e in top["entries"]}
            assert list(entries) == ["README.md", "data", "docs", "src"], top  # name order, no hidden/ignored
            assert entries["README.md"] == {
                "name": "README.md",
                "path": "README.md",
                "type": "file",
                "size": len(README.encode()),
            }
            assert entries["src"] == {"name": "src", "path": "src", "type": "directory"}
            assert "README.md" in text_of(listed) and "src/" in text_of(listed)

            src = (await client.call_tool("list_directory", {"path": "src"})).structured_content
            assert src is not None
            assert [(e["path"], e["type"], e.get("size")) for e in src["entries"]] == [
                ("src/main.py", "file", len(MAIN_PY)),
                ("src/util.py", "file", len(UTIL_PY)),
            ]

            # find_files by glob.
            found = await client.call_tool("find_files", {"glob": "*.py"})
            assert found.is_error is False, found
            assert found.structured_content == {"files": ["src/main.py", "src/util.py"], "truncated": False}
            found = await client.call_tool("find_files", {"glob": "**/*.txt"})
            assert found.structured_content == {"files": ["docs/guide.txt"], "truncated": False}
            found = await client.call_tool("find_files", {"glob": "*.log"})
            assert found.structured_content == {"files": [], "truncated": False}  # .gitignore'd

            # read_file: a line range, then the whole file.
            ranged = await client.call_tool("read_file", {"path": "src/main.py", "start_line": 3, "end_line": 5})
            assert ranged.is_error is False, ranged
            assert texts_of(ranged) == ["line 3\nline 4\nline 5\n", "[src/main.py: lines 3 to 5 of 10]"]
            whole = await client.call_tool("read_file", {"path": "src/main.py"})
            assert texts_of(whole) == [MAIN_PY]
            past = await client.call_tool("read_file", {"path": "src/main.py", "start_line": 20})
            assert past.is_error is True and "10 lines" in text_of(past), past
            # An image comes back as image content.
            image = await client.call_tool("read_file", {"path": "data/logo.png"})
            assert image.is_error is False, image
            [logo_image] = image.content
            assert isinstance(logo_image, ImageContent), image
            assert (logo_image.mime_type, base64.b64decode(logo_image.data)) == ("image/png", LOGO)

            # describe_file: a text file, a binary file, a directory.
            described = await client.call_tool("describe_file", {"path": "src/main.py"})
            assert described.is_error is False, described
            d = described.structured_content
            assert d is not None
            assert {k: d[k] for k in ("path", "uri", "type", "size", "mimeType", "isBinary", "lineCount")} == {
                "path": "src/main.py",
                "uri": tree.uri("src/main.py"),
                "type": "file",
                "size": len(MAIN_PY),
                "mimeType": "text/plain",
                "isBinary": False,
                "lineCount": 10,
            }
            for time in ("modified", "accessed"):
                assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", d[time]), d
            assert "created" not in d or re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", d["created"]), d
            mode = (tree.root / "src" / "main.py").stat().st_mode & 0o7777
            assert (d["mode"], d["readonly"]) == (f"{mode:04o}", False), d
            assert f"permissions: {mode:04o}" in text_of(described), described
            logo = (await client.call_tool("describe_file", {"path": "data/logo.png"})).structured_content
            assert logo is not None
            assert (logo["type"], logo["isBinary"], logo["mimeType"], logo["size"]) == (
                "file",
                True,
                "image/png",
                len(LOGO),
            )
            assert "lineCount" not in logo
            directory = (await client.call_tool("describe_file", {"path": "src"})).structured_content
            assert directory is not None
            assert (directory["type"], directory["uri"]) == ("directory", tree.uri("src"))


@connections(ALL)
async def test_head_and_tail(connect, conn: Connection, tree: Tree) -> None:
    """head and tail read the first and last lines, whether or not the file ends in a line break."""
    (tree.root / "src" / "open.py").write_text(MAIN_PY.rstrip("\n"))
    (tree.root / "src" / "empty.py").write_text("")
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root) as served:
            client = served.client

            async def part(path: str, **how: int) -> list[str]:
                result = await client.call_tool("read_file", {"path": path, **how})
                assert result.is_error is False, result
                return texts_of(result)

            for name, last in [("main.py", "line 9\nline 10\n"), ("open.py", "line 9\nline 10")]:
                path = f"src/{name}"
                assert await part(path, head=3) == ["line 1\nline 2\nline 3\n", f"[{path}: lines 1 to 3 of 10]"]
                assert await part(path, tail=2) == [last, f"[{path}: lines 9 to 10 of 10]"]
                whole = (tree.root / path).read_text()
                assert await part(path, tail=50) == [whole, f"[{path}: lines 1 to 10 of 10]"]
                assert await part(path, head=50) == [whole, f"[{path}: lines 1 to 10 of 10]"]
            assert await part("src/empty.py", tail=1) == ["[src/empty.py is empty]"]
            both = await client.call_tool("read_file", {"path": "src/main.py", "head": 1, "tail": 1})
            assert both.is_error is True and "not several" in text_of(both), both
            ignored = await client.call_tool("read_file", {"path": "debug.log", "tail": 1})
            assert ignored.is_error is True and "gitignore" in text_of(ignored), ignored
            assert IGNORED.strip() not in text_of(ignored)


WAV = b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x44\xac\x00\x00" + bytes(range(256))
"""The start of a WAV file: binary, and audio by its name."""


@connections(ALL)
async def test_read_multiple_files(connect, conn: Connection, tree: Tree) -> None:
    """Each file in its place: text, an image, audio, and the errors of those that cannot be read."""
    (tree.root / "data" / "chime.wav").write_bytes(WAV)
    paths = ["README.md", "src/missing.py", "data/logo.png", "data/chime.wav", "debug.log", "../outside.txt", "src"]
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root) as served:
            result = await served.client.call_tool("read_multiple_files", {"paths": paths})
    assert result.is_error is False, result
    assert_no_leak(result)
    blocks = result.content
    assert [type(b).__name__ for b in blocks] == ["TextContent"] * 4 + ["ImageContent", "TextContent", "AudioContent"] + [
        "TextContent"
    ] * 3, blocks
    assert [blocks[0].text, blocks[1].text] == ["README.md:", README]
    assert blocks[2].text.startswith("src/missing.py: error: ") and "does not exist" in blocks[2].text, blocks[2]
    assert blocks[3].text == "data/logo.png:"
    assert (blocks[4].mime_type, base64.b64decode(blocks[4].data)) == ("image/png", LOGO)
    assert blocks[5].text == "data/chime.wav:"
    assert blocks[6].mime_type.startswith("audio/") and base64.b64decode(blocks[6].data) == WAV, blocks[6].mime_type
    assert blocks[7].text.startswith("debug.log: error: ") and "gitignore" in blocks[7].text, blocks[7]
    assert blocks[8].text.startswith("../outside.txt: error: ") and "'..'" in blocks[8].text, blocks[8]
    assert blocks[9].text == "src: error: src is a directory; list it with list_directory"
    files = result.structured_content["files"]
    assert files[0] == {"path": "README.md", "type": "text", "size": len(README)}
    assert files[2] == {"path": "data/logo.png", "type": "image", "size": len(LOGO)}
    assert [("error" in f) for f in files] == [False, True, False, False, True, True, True]


@connections(ALL)
async def test_directory_tree(connect, conn: Connection, tree: Tree) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root) as served:
            client = served.client
            shallow = await client.call_tool("directory_tree", {"depth": 1})
            assert shallow.is_error is False, shallow
            assert text_of(shallow) == f"./\n  README.md ({len(README)} bytes)\n  data/\n  docs/\n  src/"
            top = shallow.structured_content
            assert top["path"] == "." and top["truncated"] is False
            assert [(e["name"], e["type"], "children" in e) for e in top["entries"]] == [
                ("README.md", "file", False),
                ("data", "directory", False),
                ("docs", "directory", False),
                ("src", "directory", False),
            ]

            deep = (await client.call_tool("directory_tree", {})).structured_content
            src = next(e for e in deep["entries"] if e["name"] == "src")
            assert src["children"] == [
                {"name": "main.py", "path": "src/main.py", "type": "file", "size": len(MAIN_PY)},
                {"name": "util.py", "path": "src/util.py", "type": "file", "size": len(UTIL_PY)},
            ]
            shown = json.dumps(deep)
            assert "debug.log" not in shown and ".hidden" not in shown and ".gitignore" not in shown, shown

            cut = await client.call_tool("directory_tree", {"limit": 2})
            assert cut.structured_content["truncated"] is True
            assert text_of(cut).endswith("(the tree stops at 2 entries: there are more; show less depth, a directory further down, or raise limit)")
            outside = await client.call_tool("directory_tree", {"path": "../outside_dir"})
            assert outside.is_error is True, outside
            assert_no_leak(outside)


# ---------------------------------------------------------------------------------------------
# 3. search_files: progress, cancellation, and the same matches as ripgrep


@dataclass
class Progress:
    """Records a call's progress notifications."""

    seen: list[tuple[float, float | None, str | None]] = field(default_factory=list)
    first: anyio.Event = field(default_factory=anyio.Event)

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))
        self.first.set()

    @property
    def values(self) -> list[float]:
        return [p for p, _, _ in self.seen]


MANY = 300
"""Small files for the progress test; every tenth holds a needle."""


@connections(ALL)
async def test_search_reports_progress(connect, conn: Connection, tmp_path: Path) -> None:
    root = tmp_path.resolve() / "many"
    for n in range(MANY):
        folder = root / f"part{n // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        needle = f"the needle {n}\n" if n % 10 == 0 else ""
        (folder / f"file{n:03}.txt").write_text(f"alpha {n}\nbeta\n{needle}gamma\n")
    progress = Progress()
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, root) as served:
            result = await served.client.call_tool(
                "search_files", {"pattern": r"needle \d+"}, progress_callback=progress
            )
            assert result.is_error is False, result
            found = result.structured_content
            assert found is not None
            assert found["filesScanned"] == MANY
            assert found["truncated"] is False
            expected = [
                {"path": f"part{n // 100}/file{n:03}.txt", "line": 3, "text": f"the needle {n}"}
                for n in range(0, MANY, 10)
            ]
            assert found["matches"] == expected
            assert text_of(result).endswith(f"({MANY // 10} matching lines in {MANY} files scanned)")
            # Progress handlers run as tasks: the last report may land just after the result.
            with anyio.fail_after(EVENT_DEADLINE):
                while not progress.values or max(progress.values) < MANY:
                    await anyio.sleep(0.01)
    assert len(progress.seen) >= 1
    assert progress.values == sorted(progress.values), progress.seen
    assert progress.values[-1] == MANY, progress.seen
    for value, total, message in progress.seen:
        assert total is None
        assert message is not None
        scanned, matches = re.fullmatch(r"(\d+) files? scanned, (\d+) matching lines?", message).groups()
        assert int(scanned) == value
        assert int(matches) <= MANY // 10


BIG_FILES = 3_000
BIG_LINES = 2_000
BIG_LINE = "lorem ipsum dolor sit amet consectetur adipiscing elit\n"
BIG_FILE_BYTES = BIG_LINES * len(BIG_LINE)


def big_tree(base: Path) -> Path:
    """3,000 files of 110 KB (hard links to one file, so the tree costs one file's disk and
    page cache; serve it with `--follow-hard-links`); a full search of it takes seconds."""
    root = base / "big"
    root.mkdir()
    source = root / "source.txt"
    source.write_text(BIG_LINE * BIG_LINES)
    for n in range(BIG_FILES):
        folder = root / f"d{n // 100:02}"
        folder.mkdir(exist_ok=True)
        os.link(source, folder / f"f{n % 100:03}.txt")
    return root


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="reads duet's I/O counters from /proc")
@connections(ALL)
async def test_search_cancellation(connect, conn: Connection, tmp_path: Path) -> None:
    """Cancel a search of a large tree once it reports progress: the client gets control back
    at once, duet stops reading files, and the session keeps serving.

    Legacy: the SDK sends `notifications/cancelled` when the call's cancel scope is cancelled.
    2026-07-28: the same notification over stdio; over HTTP the SDK closes the request's POST
    instead (closing the request is the cancellation)."""
    root = big_tree(tmp_path.resolve())
    tree_bytes = (BIG_FILES + 1) * BIG_FILE_BYTES
    progress = Progress()
    outcome: list[Any] = []
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, root, "--follow-hard-links") as served:
            client = served.client
            before = rchar(served.pid)

            async with anyio.create_task_group() as group:

                async def search() -> None:
                    args = {"pattern": "needle"}
                    outcome.append(await client.call_tool("search_files", args, progress_callback=progress))

                group.start_soon(search)
                with anyio.fail_after(READ_TIMEOUT):
                    await progress.first.wait()
                cancelled_at = time.monotonic()
                group.cancel_scope.cancel()
            returned_in = time.monotonic() - cancelled_at
            assert outcome == [], f"the search finished before it could be cancelled: {outcome}"
            assert returned_in < CANCEL_DEADLINE, returned_in
            assert progress.values and max(progress.values) < BIG_FILES, progress.seen

            # duet stops: after a moment for the file in hand, it reads nothing more.
            await anyio.sleep(0.5)
            settled = rchar(served.pid)
            await anyio.sleep(1.0)
            idle = rchar(served.pid) - settled
            assert idle < BIG_FILE_BYTES, (
                f"duet read {idle} bytes in the second after the cancelled search settled "
                f"(one file is {BIG_FILE_BYTES}): the search is still running"
            )
            assert settled - before < tree_bytes // 10, (settled - before, tree_bytes)

            # The session keeps serving.
            first = await client.call_tool("read_file", {"path": "d00/f000.txt", "start_line": 1, "end_line": 1})
            assert first.is_error is False, first
            assert text_of(first) == BIG_LINE
            one = await client.call_tool("search_files", {"pattern": "lorem", "path": "d07/f042.txt", "max_results": 1})
            assert one.is_error is False, one
            assert one.structured_content == {
                "matches": [{"path": "d07/f042.txt", "line": 1, "text": BIG_LINE.strip()}],
                "filesScanned": 1,
                "truncated": True,
            }


RG_BIN = os.environ.get("RG_BIN") or shutil.which("rg") or "/usr/bin/rg"
"""ripgrep, which `search_files` must agree with (scripts/python-interop.sh installs Debian's)."""

WORDS = "let mut value = self.items.len(); fn use std::io; return Ok(()) // TODO: fix } { [0] 42 naïve a_b(c)".split()
RARE = "needle needle( Needle NEEDLE needles a.b(c) A.B(c) café haystack".split()
"""Words the searches look for: one word in 25 is one of them."""


def source_tree(base: Path) -> Path:
    """A generated project: a `.git` directory, `.gitignore` files at two levels (one with a
    negation), an `.ignore`, git's exclude file, hidden files, binary files, a symbolic link
    out of the tree, and some 600 text files of random lines."""
    rng = random.Random(18)
    root = base / "project"

    def text() -> str:
        lines = []
        for _ in range(rng.randrange(1, 60)):
            words = [rng.choice(RARE if rng.random() < 0.04 else WORDS) for _ in range(rng.randrange(0, 10))]
            lines.append(("    " if rng.random() < 0.3 else "") + " ".join(words))
        return "\n".join(lines) + ("\n" if rng.random() < 0.9 else "")

    def put(rel: str, data: str | bytes) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())

    for n in range(600):
        folder = "/".join(rng.choice(["src", "lib", "a", "a-b", "a.b", "docs", "src/core"]) for _ in range(rng.randrange(1, 4)))
        put(f"{folder}/f{n:03}.{rng.choice(['rs', 'py', 'txt', 'md'])}", text())
    put(".git/HEAD", "ref: refs/heads/main\n")
    put(".git/info/exclude", "*.secret\n")
    put(".git/config.rs", "fn needle() in .git\n")
    put(".gitignore", "target/\n*.log\n/generated.rs\n")
    put(".ignore", "vendor/\n")
    put("src/.gitignore", "*.tmp\n!keep.tmp\n")
    for rel in ["target/debug/out.rs", "run.log", "generated.rs", "src/x.tmp", "vendor/dep.rs", "key.secret",
                ".hidden/x.rs", ".env", "src/keep.tmp", "lib/generated.rs"]:  # fmt: skip
        put(rel, "fn needle( a.b(c) café\n")
    put("data/blob.bin", b"\x00\x01needle fn needle( a.b(c)\n")
    (base / "outside.rs").write_text("fn needle( outside\n")
    os.symlink(base / "outside.rs", root / "src" / "link.rs")
    return root


def rg_places(root: Path, *flags: str) -> set[tuple[str, int]]:
    """(path, line) of every line `rg --json FLAGS` reports, matches and context."""
    done = subprocess.run(
        [RG_BIN, "--json", "--no-config", *flags, "."], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.returncode in (0, 1), done.stderr
    found = set()
    for line in done.stdout.splitlines():
        event = json.loads(line)
        if event["type"] in ("match", "context"):
            path = event["data"]["path"]["text"].removeprefix("./")
            found.add((path, event["data"]["line_number"]))
    return found


def path_order(match: dict[str, Any]) -> tuple[tuple[str, ...], int]:
    return tuple(match["path"].split("/")), match["line"]


SAME_AS_RG = [
    ({"pattern": "needle"}, ["-e", "needle"]),
    ({"pattern": r"\bfn\s+\w+\("}, ["-e", r"\bfn\s+\w+\("]),
    ({"pattern": "needle", "case_insensitive": True}, ["-i", "-e", "needle"]),
    ({"pattern": "a.b(c)", "literal": True}, ["-F", "-e", "a.b(c)"]),
    ({"pattern": "A.B(C)", "literal": True, "case_insensitive": True}, ["-F", "-i", "-e", "A.B(C)"]),
    ({"pattern": "^    use "}, ["-e", "^    use "]),
    ({"pattern": "café$"}, ["-e", "café$"]),
    # Not rg -g, which searches ignored files the glob names: ignored files are never served.
    ({"pattern": "needle", "glob": "*.rs"}, ["--type-add", "only:*.rs", "-t", "only", "-e", "needle"]),
    ({"pattern": "haystack", "before": 2, "after": 1}, ["-B", "2", "-A", "1", "-e", "haystack"]),
    ({"pattern": "a.b(c)", "literal": True, "before": 1, "after": 3}, ["-F", "-B", "1", "-A", "3", "-e", "a.b(c)"]),
    ({"pattern": "NEEDLE", "case_insensitive": True, "after": 2}, ["-i", "-A", "2", "-e", "NEEDLE"]),
    ({"pattern": "café", "literal": True, "case_insensitive": True, "before": 3}, ["-F", "-i", "-B", "3", "-e", "café"]),
    ({"pattern": r"\bneedles?\b"}, ["-e", r"\bneedles?\b"]),
]


@connections(ALL)
async def test_search_finds_what_ripgrep_finds(connect, conn: Connection, tmp_path: Path) -> None:
    """On a generated tree, every search's matches (and context lines) are the lines rg
    reports with the same options, in path then line order."""
    if not os.access(RG_BIN, os.X_OK):
        pytest.fail(f"ripgrep not found at {RG_BIN}; scripts/python-interop.sh installs it")
    root = source_tree(tmp_path.resolve())
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, root) as served:
            for args, flags in SAME_AS_RG:
                result = await served.client.call_tool("search_files", {**args, "max_results": 5000})
                assert result.is_error is False, result
                found = result.structured_content
                assert found is not None and found["truncated"] is False
                matches = found["matches"]
                assert matches == sorted(matches, key=path_order), args
                places = {(m["path"], m["line"]) for m in matches}
                for m in matches:
                    places |= {(m["path"], c["line"]) for c in m.get("before", []) + m.get("after", [])}
                expected = rg_places(root, *flags)
                assert len(expected) > 20, (args, expected)
                assert places == expected, (args, sorted(places ^ expected)[:10])


# ---------------------------------------------------------------------------------------------
# 4. Change notifications




def updated(uri: str) -> Callable[[Any], bool]:
    return lambda m: isinstance(m, ResourceUpdatedNotification) and m.params.uri == uri


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
@pytest.mark.filterwarnings("ignore:resources/unsubscribe is removed")
@connections(LEGACY)
async def test_legacy_subscription_and_list_changed(connect, conn: Connection, tree: Tree) -> None:
    """Handshake era: resources/subscribe to README.md, then edits → notifications/resources/updated
    for that URI only; a new file → notifications/resources/list_changed."""
    inbox = Inbox()
    readme, guide = tree.uri("README.md"), tree.uri("docs/guide.txt")
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root, message_handler=inbox.handler) as served:
            client = served.client
            await client.subscribe_resource(readme)

            # An edit to a file nobody subscribed to, then one to the subscribed file.
            (tree.root / "docs" / "guide.txt").write_text(GUIDE + "edited\n")
            await anyio.sleep(0.5)
            (tree.root / "README.md").write_text(README + "An edit.\n")
            await inbox.wait_for(updated(readme))
            await anyio.sleep(0.3)  # anything sent with it has arrived too
            assert not any(updated(guide)(m) for m in inbox.messages), inbox.messages
            [contents] = (await client.read_resource(readme)).contents
            assert isinstance(contents, TextResourceContents)
            assert contents.text == README + "An edit.\n"

            # A new file changes the list.
            (tree.root / "docs" / "new.md").write_text("# New\n")
            await inbox.wait_for(lambda m: isinstance(m, ResourceListChangedNotification))
            names = {r.name for r in await all_resources(client)}
            assert names == set(LISTED) | {"docs/new.md"}

            # Unsubscribed: a later edit is not announced.
            await client.unsubscribe_resource(readme)
            inbox.messages.clear()
            (tree.root / "README.md").write_text(README + "Another edit.\n")
            (tree.root / "docs" / "other.md").write_text("# Other\n")  # a change that is announced
            await inbox.wait_for(lambda m: isinstance(m, ResourceListChangedNotification))
            await anyio.sleep(0.3)
            assert not any(updated(readme)(m) for m in inbox.messages), inbox.messages


async def next_event(subscription, skip: Callable[[Any], bool] = lambda _: False) -> Any:
    """The next event of a `client.listen(...)` subscription (skipping `skip`), within EVENT_DEADLINE."""
    with anyio.fail_after(EVENT_DEADLINE):
        while True:
            event = await subscription.__anext__()
            if not skip(event):
                return event


@connections(MODERN_CONNECTIONS)
async def test_auto_listen_resource_updated(connect, conn: Connection, tree: Tree) -> None:
    """2026-07-28: a listen naming README.md gets ResourceUpdated for it after an edit, and not
    for an edit to another file."""
    readme = tree.uri("README.md")
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root) as served:
            client = served.client
            async with client.listen(resource_subscriptions=[readme]) as subscription:
                assert subscription.honored.resource_subscriptions == [readme]
                assert not subscription.honored.resources_list_changed
                (tree.root / "docs" / "guide.txt").write_text(GUIDE + "edited\n")
                await anyio.sleep(0.5)
                (tree.root / "README.md").write_text(README + "An edit.\n")
                assert await next_event(subscription) == ResourceUpdated(uri=readme)
            [contents] = (await client.read_resource(readme)).contents
            assert isinstance(contents, TextResourceContents)
            assert contents.text == README + "An edit.\n"


@connections(MODERN_CONNECTIONS)
async def test_auto_listen_resources_list_changed(connect, conn: Connection, tree: Tree) -> None:
    """2026-07-28: a listen for resource list changes gets ResourcesListChanged when a file appears,
    and again when one goes away."""
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root) as served:
            client = served.client
            async with client.listen(resources_list_changed=True) as subscription:
                assert subscription.honored.resources_list_changed is True
                (tree.root / "src" / "added.py").write_text("x = 1\n")
                assert await next_event(subscription) == ResourcesListChanged()
                names = {r.name for r in await all_resources(client)}
                assert names == set(LISTED) | {"src/added.py"}
                (tree.root / "docs" / "guide.txt").unlink()
                assert await next_event(subscription) == ResourcesListChanged()
                names = {r.name for r in await all_resources(client)}
                assert names == (set(LISTED) | {"src/added.py"}) - {"docs/guide.txt"}


# ---------------------------------------------------------------------------------------------
# Skills (SEP-2640): folders holding a SKILL.md in the places agents keep them


class SkillsList(PaginatedRequest[Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"


class UriParams(RequestParams):
    uri: str


class SkillsGet(Request[UriParams, Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"


class DirectoryRead(Request[UriParams, Literal["resources/directory/read"]]):
    method: Literal["resources/directory/read"] = "resources/directory/read"


ANY_RESULT = TypeAdapter(dict[str, Any])

SKILLS = {
    ".claude/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Deploy the demo safely\n---\nRun scripts/run.sh.\n",
    ".claude/skills/deploy/scripts/run.sh": "echo deploying\n",
    ".claude/skills/deploy/.env": SECRET + "\n",
    ".claude/skills/deploy/build.log": IGNORED,
    "skills/review/SKILL.md": "---\nname: review\ndescription: Review a change\nlicense: MIT\n---\nSee checklist.md.\n",
    "skills/review/checklist.md": "- tests\n- docs\n",
    "skills/misnamed/SKILL.md": "---\nname: other\ndescription: Its folder is not its name\n---\n",
    "skills/private/SKILL.md": "---\nname: private\ndescription: Ignored by .gitignore\n---\n",
    ".agents/skills/review/SKILL.md": "---\nname: review\ndescription: A second review, shadowed\n---\n",
}
"""A root's skills: deploy (hidden place; its .env is hidden and build.log ignored, so neither
is served), review (skills/; the same name under .agents/skills comes before it in the order of
places and wins), and two that are not served: misnamed (folder and name differ) and private
(.gitignore'd)."""


def skill_tree(tmp_path: Path) -> Path:
    root = tmp_path.resolve() / "skills-root"
    for rel, text in {**SKILLS, ".gitignore": "*.log\nskills/private/\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def sha256(text: str) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


async def list_skills(client: Client) -> list[dict[str, Any]]:
    skills, cursor = [], None
    while True:
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await client.session.send_request(SkillsList(params=params), ANY_RESULT)
        skills += page["skills"]
        cursor = page.get("nextCursor")
        if not cursor:
            return skills


@connections(ALL)
async def test_skills_are_listed_got_and_read(connect, conn: Connection, tmp_path: Path) -> None:
    """The workspace declares the skills extension and serves the skills of its root: listed with
    their frontmatter and the digest and size of every file, got one by one, each folder
    listed, each file read; hidden, ignored, misnamed and shadowed ones are not served."""
    root = skill_tree(tmp_path)
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, root) as served:
            client = served.client
            extensions = client.server_capabilities.model_dump(by_alias=True)["extensions"]
            assert extensions["io.modelcontextprotocol/skills"] == {"directoryRead": True}
            skills = await list_skills(client)
            assert [s["uri"] for s in skills] == ["skill://deploy/SKILL.md", "skill://review/SKILL.md"]
            review = SKILLS[".agents/skills/review/SKILL.md"]
            assert skills[1]["frontmatter"] == {"name": "review", "description": "A second review, shadowed"}
            deploy_md = SKILLS[".claude/skills/deploy/SKILL.md"]
            assert skills[0]["resources"] == [
                {"uri": "skill://deploy/SKILL.md", "digest": sha256(deploy_md), "size": len(deploy_md)},
                {"uri": "skill://deploy/scripts/run.sh", "digest": sha256("echo deploying\n"), "size": 15},
            ]
            assert skills[1]["resources"] == [{"uri": "skill://review/SKILL.md", "digest": sha256(review), "size": len(review)}]

            got = await client.session.send_request(SkillsGet(params=UriParams(uri="skill://deploy/SKILL.md")), ANY_RESULT)
            assert got["skill"] == skills[0]
            with pytest.raises(MCPError) as unknown:
                await client.session.send_request(SkillsGet(params=UriParams(uri="skill://other/SKILL.md")), ANY_RESULT)
            assert unknown.value.error.code == -32602

            listing = await client.session.send_request(DirectoryRead(params=UriParams(uri="skill://deploy")), ANY_RESULT)
            assert [(r["name"], r.get("mimeType")) for r in listing["resources"]] == [
                ("SKILL.md", "text/markdown"),
                ("scripts", "inode/directory"),
            ]

            [manifest] = (await client.read_resource("skill://deploy/SKILL.md")).contents
            assert isinstance(manifest, TextResourceContents)
            assert (manifest.text, manifest.mime_type) == (deploy_md, "text/markdown")
            [script] = (await client.read_resource("skill://deploy/scripts/run.sh")).contents
            assert isinstance(script, TextResourceContents) and script.text == "echo deploying\n"
            listed = {r.uri: r for r in await all_resources(client)}
            assert listed["skill://review/SKILL.md"].name == "review"
            assert listed["skill://review/SKILL.md"].description == "A second review, shadowed"
            for unserved in ["skill://deploy/.env", "skill://deploy/build.log", "skill://private/SKILL.md", "skill://other/SKILL.md"]:
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(unserved)
                assert SECRET not in str(refused.value), unserved


@connections(MODERN_CONNECTIONS)
async def test_a_skill_added_while_serving_is_listed(connect, conn: Connection, tmp_path: Path) -> None:
    """A skill folder created under the hidden .claude/skills while duet runs is seen by the
    watcher: the resource list changes and skills/list shows it."""
    root = skill_tree(tmp_path)
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, root) as served:
            client = served.client
            async with client.listen(resources_list_changed=True) as subscription:
                added = root / ".claude" / "skills" / "notes"
                added.mkdir()
                (added / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes\n---\n")
                assert await next_event(subscription) == ResourcesListChanged()
                with anyio.fail_after(EVENT_DEADLINE):
                    while "skill://notes/SKILL.md" not in [s["uri"] for s in await list_skills(client)]:
                        await anyio.sleep(0.05)


# ---------------------------------------------------------------------------------------------
# 5. Confinement


def inotify_watches(pid: int) -> int:
    """How many inotify watches process `pid` holds (the `inotify wd:` lines of its
    inotify descriptors' fdinfo)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                count += sum(line.startswith("inotify wd:") for line in info)
        except OSError:
            continue
    return count


@pytest.mark.skipif(not os.path.isdir("/proc/self/fdinfo"), reason="counts inotify watches through /proc")
def test_only_served_directories_are_watched(duet_factory, tmp_path: Path) -> None:
    """One watch per served directory: none for `.git`'s or an ignored directory's many
    subdirectories; a directory made later is watched too."""
    root = tmp_path / "ws"
    for rel in ["src/a", "src/b", "docs"]:
        (root / rel).mkdir(parents=True)
    for n in range(40):
        (root / ".git" / "objects" / f"{n:02x}").mkdir(parents=True)
        (root / "target" / "debug" / f"dep-{n}").mkdir(parents=True)
    (root / ".gitignore").write_text("target/\n")
    (root / "src" / "a" / "one.txt").write_text("one\n")
    server = duet_factory("--root", str(root), "--log-level", "debug", fixtures=None)
    served = 5  # the root, src, src/a, src/b, docs
    # The watches are set up beside the serving: wait for them, then for nothing more.
    deadline = time.monotonic() + EVENT_DEADLINE
    while inotify_watches(server.process.pid) < served and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    assert inotify_watches(server.process.pid) == served
    (root / "fresh").mkdir()
    time.sleep(0.5)
    (root / "fresh" / "new.txt").write_text("new\n")
    deadline = time.monotonic() + EVENT_DEADLINE
    while inotify_watches(server.process.pid) < served + 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert inotify_watches(server.process.pid) == served + 1


RESCAN = "rescanning the workspace"
"""What duet logs (at debug) each time it walks every root again: only when its watcher has
lost track of events; new, removed and changed files cost none."""


async def test_writes_to_ignored_files_cause_no_rescan(connect, tmp_path: Path) -> None:
    """A build writing into an ignored directory (not even watched), and a log written beside
    served files, 20 times each: no rescan and nothing told to the client (the events are
    dropped on the ignore check); a new visible file then is listed and announced, still
    with no rescan."""
    root = tmp_path / "ws"
    (root / "target").mkdir(parents=True)
    (root / ".gitignore").write_text("target/\n*.log\n")
    (root / "README.md").write_text("hello\n")
    inbox = Inbox()
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(HTTP_LEGACY, root, "--log-level", "debug", message_handler=inbox.handler) as served:
            client = served.client
            assert {r.name for r in await all_resources(client)} == {"README.md"}
            for n in range(20):
                (root / "target" / "out.o").write_bytes(os.urandom(64) * (n + 1))
                (root / "target" / f"part-{n}.o").write_bytes(b"x")
                with open(root / "build.log", "a") as log:
                    log.write(f"step {n}\n")
                await anyio.sleep(0.02)
            await anyio.sleep(1)  # well past the watcher's quiet time
            told = [m for m in inbox.messages if isinstance(m, (ResourceListChangedNotification, ResourceUpdatedNotification))]
            assert told == [], told
            assert served.stderr().count(RESCAN) == 0, served.stderr()
            (root / "NEW.md").write_text("new\n")
            await inbox.wait_for(lambda m: isinstance(m, ResourceListChangedNotification))
            assert {r.name for r in await all_resources(client)} == {"README.md", "NEW.md"}
            assert served.stderr().count(RESCAN) == 0, served.stderr()


@asynccontextmanager
async def list_changes(conn: Connection, client: Client, inbox: Inbox) -> AsyncIterator[Callable[[], int]]:
    """How many times the client has been told the resource list changed: notifications
    on the handshake era (caught by `inbox`), events of a listen stream on 2026-07-28."""
    if not conn.modern:
        yield lambda: sum(isinstance(m, ResourceListChangedNotification) for m in inbox.messages)
        return
    seen: list[Any] = []
    async with client.listen(resources_list_changed=True) as subscription, anyio.create_task_group() as group:

        async def count() -> None:
            async for event in subscription:
                if event == ResourcesListChanged():
                    seen.append(event)

        group.start_soon(count)
        yield lambda: len(seen)
        group.cancel_scope.cancel()


async def settles_at(told: Callable[[], int], expected: int) -> None:
    """Waits for the `expected`-th notification, then a second more (past the watcher's
    quiet time and then some): no other may come."""
    with anyio.fail_after(EVENT_DEADLINE):
        while told() < expected:
            await anyio.sleep(0.02)
    await anyio.sleep(1.0)
    assert told() == expected


@connections({"stdio-legacy": STDIO_LEGACY, "http-auto": HTTP_AUTO})
async def test_a_burst_of_new_files_is_one_list_changed(connect, conn: Connection, tmp_path: Path) -> None:
    """In a tree past the old cap, 61 files made at once (in a new directory tree, in an old
    directory, and one that sorts after every other file) are announced by one list_changed
    and listed, each once, with no rescan; removing the new directory tree is one more."""
    root, names = large_tree(tmp_path.resolve(), 10_050)
    inbox = Inbox()
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, root, "--log-level", "debug", message_handler=inbox.handler) as served:
            client = served.client
            assert len(await all_resources(client)) == len(names)
            async with list_changes(conn, client, inbox) as told:
                made = {f"burst/{n % 3}/new{n:02}.txt" if n % 2 else f"d050/new{n:02}.txt" for n in range(60)}
                made.add("zzz/last.txt")
                for rel in sorted(made):
                    (root / rel).parent.mkdir(parents=True, exist_ok=True)
                    (root / rel).write_text("new\n")
                await settles_at(told, 1)
                listed = [r.name for r in await all_resources(client)]
                assert len(listed) == len(set(listed)) and set(listed) == names | made, set(listed) ^ (names | made)
                assert listed[-1] == "zzz/last.txt"

                shutil.rmtree(root / "burst")
                await settles_at(told, 2)
                listed = [r.name for r in await all_resources(client)]
                assert set(listed) == names | {rel for rel in made if not rel.startswith("burst/")}
            assert served.stderr().count(RESCAN) == 0, served.stderr()


@connections(ALL)
async def test_paths_cannot_escape_the_root(connect, conn: Connection, tree: Tree) -> None:
    root = tree.root
    os.symlink(tree.outside, root / "escape.txt")
    os.symlink(tree.outside_dir, root / "escape_dir")
    os.symlink("../../outside.txt", root / "src" / "relative_escape.txt")
    inside_link = root / "docs" / "readme_link.md"
    os.symlink(root / "README.md", inside_link)  # a link that stays inside is fine

    escaping_paths = [
        "../outside.txt",
        "src/../../outside.txt",
        "./../outside_dir/secret.txt",
        str(tree.outside),
        str(tree.outside_dir / "secret.txt"),
        "file://" + quote(str(tree.outside)),
        "/etc/passwd",
        "file:///etc/passwd",
        "escape.txt",
        "escape_dir/secret.txt",
        "src/relative_escape.txt",
        str(root / "escape.txt"),
        tree.uri("escape_dir/secret.txt"),
    ]
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, root) as served:
            client = served.client

            for path in escaping_paths:
                for tool in ("read_file", "describe_file"):
                    result = await client.call_tool(tool, {"path": path})
                    assert result.is_error is True, (tool, path, result)
                    assert_no_leak(result)
                    message = text_of(result)
                    assert any(
                        why in message
                        for why in ("'..' is not allowed", "outside the workspace", "through a symbolic link")
                    ), (tool, path, message)
                ranged = await client.call_tool("read_file", {"path": path, "start_line": 1, "end_line": 1})
                assert ranged.is_error is True, (path, ranged)
                assert_no_leak(ranged)

            for tool, args in [
                ("list_directory", {"path": ".."}),
                ("list_directory", {"path": "escape_dir"}),
                ("list_directory", {"path": str(tree.outside_dir)}),
                ("find_files", {"glob": "*", "path": ".."}),
                ("find_files", {"glob": "*", "path": "escape_dir"}),
                ("search_files", {"pattern": "SECRET", "path": ".."}),
                ("search_files", {"pattern": "SECRET", "path": "escape_dir"}),
                ("search_files", {"pattern": "SECRET", "path": "escape.txt"}),
                ("search_files", {"pattern": "root", "path": "/etc"}),
            ]:
                result = await client.call_tool(tool, args)
                assert result.is_error is True, (tool, args, result)
                assert_no_leak(result)

            # Searching and finding from the top never follows the links out.
            searched = await client.call_tool("search_files", {"pattern": "SECRET"})
            assert searched.is_error is False, searched
            assert searched.structured_content is not None
            assert searched.structured_content["matches"] == []
            assert_no_leak(searched)
            found = await client.call_tool("find_files", {"glob": "**/secret.txt"})
            assert found.structured_content == {"files": [], "truncated": False}
            listed = await client.call_tool("list_directory", {"path": "."})
            assert_no_leak(listed)
            entries = {e["name"]: e for e in listed.structured_content["entries"]}
            assert entries["escape.txt"] == {"name": "escape.txt", "path": "escape.txt", "type": "symlink"}
            assert entries["escape_dir"]["type"] == "symlink"

            # The links are not resources, and reading them as resources fails.
            resources = await all_resources(client)
            assert_no_leak(resources)
            assert {r.name for r in resources} == set(LISTED)
            for uri in [
                "file:///etc/passwd",
                "file://localhost/etc/passwd",
                "file://" + quote(str(tree.outside)),
                tree.uri("escape.txt"),
                tree.uri("escape_dir/secret.txt"),
                tree.uri("src/relative_escape.txt"),
                tree.uri("") + "/../outside.txt",
                tree.uri("") + "/%2E%2E/outside.txt",
                tree.expand("escape_dir/secret.txt"),
            ]:
                with pytest.raises(MCPError) as caught:
                    answer = await client.read_resource(uri)
                    assert_no_leak(answer)  # only reached if duet answers (then the raise check fails)
                assert_no_leak(caught.value)
                assert caught.value.code in (-32602, -32002), (uri, caught.value.error)

            # Prompts resolve their paths the same way.
            for path in ["../outside.txt", str(tree.outside), "escape.txt", "/etc/passwd"]:
                with pytest.raises(MCPError) as caught:
                    answer = await client.get_prompt("review_file", {"path": path})
                    assert_no_leak(answer)
                assert_no_leak(caught.value)
            with pytest.raises(MCPError) as caught:
                await client.get_prompt("summarize_directory", {"path": ".."})
            assert_no_leak(caught.value)

            # A link that stays inside the root is followed.
            inside = await client.call_tool("read_file", {"path": "docs/readme_link.md"})
            assert inside.is_error is False, inside
            assert text_of(inside) == README


# ---------------------------------------------------------------------------------------------
# 6. Prompts and completion


@connections(ALL)
async def test_prompts_and_completion(connect, conn: Connection, tree: Tree) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root) as served:
            client = served.client
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            assert set(prompts) == {"review_file", "summarize_directory"}
            [path_arg] = prompts["review_file"].arguments or []
            assert (path_arg.name, path_arg.required) == ("path", True)

            review = await client.get_prompt("review_file", {"path": "src/main.py"})
            assert len(review.messages) == 2, review
            attached, ask = review.messages
            assert attached.role == "user" and ask.role == "user"
            assert isinstance(attached.content, EmbeddedResource), attached
            resource = attached.content.resource
            assert isinstance(resource, TextResourceContents), resource
            assert resource.uri == tree.uri("src/main.py")
            assert resource.text == MAIN_PY
            assert isinstance(ask.content, TextContent)
            assert "src/main.py" in ask.content.text

            summary = await client.get_prompt("summarize_directory", {"path": "src"})
            tree_text = summary.messages[0].content
            assert isinstance(tree_text, TextContent), summary
            assert "src/main.py" in tree_text.text and "src/util.py" in tree_text.text
            assert "README.md" not in tree_text.text

            with pytest.raises(MCPError):
                await client.get_prompt("review_file", {"path": "src/missing.py"})

            async def complete(ref: Any, value: str, name: str = "path") -> list[str]:
                answer = await client.complete(ref, {"name": name, "value": value})
                return answer.completion.values

            review_ref = PromptReference(type="ref/prompt", name="review_file")
            assert await complete(review_ref, "src/") == ["src/main.py", "src/util.py"]
            assert await complete(review_ref, "src/u") == ["src/util.py"]
            assert await complete(review_ref, "RE") == ["README.md"]
            assert await complete(review_ref, "nothing-") == []
            assert await complete(review_ref, "") == sorted(LISTED)

            summarize_ref = PromptReference(type="ref/prompt", name="summarize_directory")
            assert await complete(summarize_ref, "d") == ["data", "docs"]

            template_ref = ResourceTemplateReference(type="ref/resource", uri=tree.template)
            assert await complete(template_ref, "docs/") == ["docs/guide.txt"]


# ---------------------------------------------------------------------------------------------
# 7. Writing (`duet serve --allow-write`): every change confirmed by the user first


@dataclass
class Confirmer:
    """An elicitation callback that answers every confirmation with `action` (and `ok: true`
    when accepting), recording what the user was asked."""

    action: str
    asked: list[str] = field(default_factory=list)

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams), params
        assert params.requested_schema["properties"]["ok"] == {"type": "boolean"}, params
        self.asked.append(params.message)
        if self.action == "accept":
            return ElicitResult(action="accept", content={"ok": True})
        return ElicitResult(action=self.action)


WRITE_TOOLS = {"write_file", "edit_file", "create_directory", "move_file"}


@connections(ALL)
async def test_confirmed_writes_and_edits(connect, conn: Connection, tree: Tree) -> None:
    """The user says yes: write_file creates a file (and its directory), edit_file changes one."""
    confirmer = Confirmer("accept")
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root, "--allow-write", elicitation_callback=confirmer) as served:
            client = served.client
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert WRITE_TOOLS <= set(tools), set(tools)
            for name in WRITE_TOOLS:
                hints = tools[name].annotations
                assert hints is not None and hints.read_only_hint is False, name
                assert hints.destructive_hint is (name != "create_directory"), name

            created = await client.call_tool("write_file", {"path": "notes/todo.md", "content": "- write tests\n"})
            assert created.is_error is False, created
            assert created.structured_content == {
                "path": "notes/todo.md",
                "uri": tree.uri("notes/todo.md"),
                "created": True,
                "size": len("- write tests\n"),
            }
            assert (tree.root / "notes" / "todo.md").read_text() == "- write tests\n"
            assert confirmer.asked == ["Create notes/todo.md (14 bytes, 1 line)?\n\n+ - write tests"]

            edited = await client.call_tool("edit_file", {"path": "src/util.py", "old_text": "42", "new_text": "43"})
            assert edited.is_error is False, edited
            assert edited.structured_content is not None and edited.structured_content["replacements"] == 1
            assert (tree.root / "src" / "util.py").read_text() == UTIL_PY.replace("42", "43")
            assert confirmer.asked[1] == "Replace 1 occurrence in src/util.py (at line 2)?\n\n- 42\n+ 43"

            # What was written is what the workspace serves.
            [contents] = (await client.read_resource(tree.uri("notes/todo.md"))).contents
            assert isinstance(contents, TextResourceContents) and contents.text == "- write tests\n"


@pytest.mark.parametrize("action", ["decline", "cancel"])
@connections(ALL)
async def test_declined_writes_change_nothing(connect, conn: Connection, tree: Tree, action: str) -> None:
    confirmer = Confirmer(action)
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root, "--allow-write", elicitation_callback=confirmer) as served:
            client = served.client
            replaced = await client.call_tool("write_file", {"path": "README.md", "content": "gone\n"})
            created = await client.call_tool("write_file", {"path": "new/file.txt", "content": "x"})
            edited = await client.call_tool("edit_file", {"path": "src/main.py", "old_text": "line 1\n", "new_text": ""})
    past = "declined" if action == "decline" else "cancelled"
    for result, name in [(replaced, "README.md"), (created, "new/file.txt"), (edited, "src/main.py")]:
        assert result.is_error is True, result
        assert f"the user {past}" in text_of(result), result
        assert text_of(result).endswith(f"nothing was written to {name}"), result
    assert len(confirmer.asked) == 3
    assert confirmer.asked[0].startswith("Overwrite README.md ("), confirmer.asked
    assert (tree.root / "README.md").read_text() == README
    assert (tree.root / "src" / "main.py").read_text() == MAIN_PY
    assert not (tree.root / "new").exists()


@connections({"stdio-legacy": STDIO_LEGACY, "http-auto": HTTP_AUTO})
async def test_writes_without_a_way_to_ask_the_user(connect, conn: Connection, tree: Tree) -> None:
    """A client without an elicitation callback declares no elicitation capability: no write."""
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root, "--allow-write") as served:
            result = await served.client.call_tool("write_file", {"path": "README.md", "content": "gone\n"})
    assert result.is_error is True, result
    assert "cannot ask the user" in text_of(result), result
    assert (tree.root / "README.md").read_text() == README


@connections(ALL)
async def test_writes_cannot_escape_the_root(connect, conn: Connection, tree: Tree) -> None:
    """Escapes are refused before the user is asked anything; nothing outside changes."""
    os.symlink(tree.outside, tree.root / "escape.txt")
    os.symlink(tree.outside_dir, tree.root / "escape_dir")
    confirmer = Confirmer("accept")
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root, "--allow-write", elicitation_callback=confirmer) as served:
            client = served.client
            for path in [
                "../outside.txt",
                str(tree.outside),
                "escape.txt",
                "escape_dir/secret.txt",
                "escape_dir/new.txt",
                "debug.log",
                ".git/config",
            ]:
                for tool, args in [
                    ("write_file", {"path": path, "content": "pwned\n"}),
                    ("edit_file", {"path": path, "old_text": "TOP", "new_text": "pwned"}),
                    ("edit_file", {"path": path, "edits": [{"old_text": "TOP", "new_text": "pwned"}], "dry_run": True}),
                    ("create_directory", {"path": path}),
                    ("move_file", {"source": path, "destination": "moved.txt"}),
                    ("move_file", {"source": "README.md", "destination": path, "overwrite": True}),
                ]:
                    result = await client.call_tool(tool, args)
                    assert result.is_error is True, (tool, path, result)
                    assert_no_leak(result)
    assert confirmer.asked == []
    assert tree.outside.read_text() == SECRET + "\n"
    assert sorted(p.name for p in tree.outside_dir.iterdir()) == ["secret.txt"]
    assert (tree.root / "debug.log").read_text() == IGNORED
    assert not (tree.root / ".git").exists()
    assert (tree.root / "README.md").read_text() == README
    assert not (tree.root / "moved.txt").exists()


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
@connections(LEGACY)
async def test_a_confirmed_write_reaches_subscribers(connect, conn: Connection, tree: Tree) -> None:
    inbox = Inbox()
    readme = tree.uri("README.md")
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(
            conn, tree.root, "--allow-write", elicitation_callback=Confirmer("accept"), message_handler=inbox.handler
        ) as served:
            await served.client.subscribe_resource(readme)
            result = await served.client.call_tool("write_file", {"path": "README.md", "content": "# Rewritten\n"})
            assert result.is_error is False, result
            await inbox.wait_for(updated(readme))



@connections(ALL)
async def test_multi_edit_dry_run_then_confirmed(connect, conn: Connection, tree: Tree) -> None:
    """A dry run shows the unified diff of every edit and asks nothing; the real run asks once and writes them all."""
    edits = [
        {"old_text": "return 42", "new_text": "return 43"},
        {"old_text": "def helper():", "new_text": "def helper() -> int:"},
        # Not there exactly (indentation, a trailing blank): matched with whitespace ignored.
        {"old_text": "  return 43 ", "new_text": "return 44"},
    ]
    edited = "def helper() -> int:\n    return 44\n"
    confirmer = Confirmer("accept")
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root, "--allow-write", elicitation_callback=confirmer) as served:
            client = served.client
            dry = await client.call_tool("edit_file", {"path": "src/util.py", "edits": edits, "dry_run": True})
            assert dry.is_error is False, dry
            diff = "--- a/src/util.py\n+++ b/src/util.py\n@@ -1,2 +1,2 @@\n-def helper():\n-    return 42\n+def helper() -> int:\n+    return 44\n"
            assert dry.structured_content["diff"] == diff, dry.structured_content
            assert dry.structured_content["dryRun"] is True
            assert text_of(dry).startswith(diff) and "nothing was written" in text_of(dry), text_of(dry)
            assert [e["whitespaceIgnored"] for e in dry.structured_content["edits"]] == [False, False, True]
            assert confirmer.asked == [], "a dry run asks nothing"
            assert (tree.root / "src" / "util.py").read_text() == UTIL_PY

            done = await client.call_tool("edit_file", {"path": "src/util.py", "edits": edits})
            assert done.is_error is False, done
            assert text_of(done).startswith("Applied 3 edits to src/util.py: "), text_of(done)
            assert "whitespace ignored" in text_of(done)
            assert done.structured_content["dryRun"] is False and "diff" not in done.structured_content
    assert (tree.root / "src" / "util.py").read_text() == edited
    [asked] = confirmer.asked
    assert asked.startswith("Apply 3 edits to src/util.py?\n\n1. Replace 1 occurrence (at line 2)\n\n- return 42\n+ return 43"), asked


@connections(ALL)
async def test_one_failing_edit_writes_nothing(connect, conn: Connection, tree: Tree) -> None:
    confirmer = Confirmer("accept")
    edits = [{"old_text": "return 42", "new_text": "return 43"}, {"old_text": "nowhere", "new_text": "x"}]
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root, "--allow-write", elicitation_callback=confirmer) as served:
            result = await served.client.call_tool("edit_file", {"path": "src/util.py", "edits": edits})
    assert result.is_error is True, result
    assert text_of(result).startswith("edits[1]: old_text was not found in src/util.py"), text_of(result)
    assert confirmer.asked == []
    assert (tree.root / "src" / "util.py").read_text() == UTIL_PY


@connections(ALL)
async def test_create_directory_and_move_file(connect, conn: Connection, tree: Tree) -> None:
    confirmer = Confirmer("accept")
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root, "--allow-write", elicitation_callback=confirmer) as served:
            client = served.client
            created = await client.call_tool("create_directory", {"path": "notes/drafts"})
            assert created.is_error is False, created
            assert created.structured_content == {"path": "notes/drafts", "uri": tree.uri("notes/drafts"), "created": True}
            assert (tree.root / "notes" / "drafts").is_dir()
            there = await client.call_tool("create_directory", {"path": "notes/drafts"})
            assert there.is_error is False and there.structured_content["created"] is False, there

            moved = await client.call_tool("move_file", {"source": "docs/guide.txt", "destination": "notes/drafts/guide.txt"})
            assert moved.is_error is False, moved
            assert moved.structured_content == {
                "source": "docs/guide.txt",
                "destination": "notes/drafts/guide.txt",
                "uri": tree.uri("notes/drafts/guide.txt"),
                "replaced": False,
            }
            assert not (tree.root / "docs" / "guide.txt").exists()
            assert (tree.root / "notes" / "drafts" / "guide.txt").read_text() == GUIDE

            # An existing destination is replaced only with overwrite, and is asked about.
            asked_before = len(confirmer.asked)
            refused = await client.call_tool("move_file", {"source": "src/util.py", "destination": "src/main.py"})
            assert refused.is_error is True and "set overwrite" in text_of(refused), refused
            assert len(confirmer.asked) == asked_before
            assert (tree.root / "src" / "main.py").read_text() == MAIN_PY
            replaced = await client.call_tool(
                "move_file", {"source": "src/util.py", "destination": "src/main.py", "overwrite": True}
            )
            assert replaced.is_error is False and replaced.structured_content["replaced"] is True, replaced
    assert confirmer.asked == [
        "Create the directory notes/drafts?",
        "Move docs/guide.txt to notes/drafts/guide.txt?",
        f"Move src/util.py to src/main.py, replacing the file there ({len(MAIN_PY)} bytes)?",
    ]
    assert (tree.root / "src" / "main.py").read_text() == UTIL_PY
    assert not (tree.root / "src" / "util.py").exists()


# ---------------------------------------------------------------------------------------------
# The client's roots


@dataclass
class Roots:
    """The roots the SDK's list-roots callback answers, and how often duet asked."""

    uris: list[str]
    asked: int = 0

    async def __call__(self, context: Any) -> ListRootsResult:
        self.asked += 1
        return ListRootsResult(roots=[Root(uri=uri) for uri in self.uris])


@connections(ALL)
async def test_client_roots_narrow_the_workspace(connect, conn: Connection, tree: Tree) -> None:
    """A handshake-era client that declares roots is asked `roots/list`, and duet serves only
    what lies under them: a file outside is refused naming the roots in force, and a
    listing, find, search or resource list without a path covers them only. On 2026-07-28
    there is no roots notification: duet keeps the roots it was started with and asks
    nothing (see the README's workspace section)."""
    roots = Roots([tree.uri("src"), tree.uri("docs")])
    in_force = f"the roots in force (the client's, within the workspace) are {tree.root}/docs, {tree.root}/src"
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root, list_roots_callback=roots) as served:
            client = served.client
            readme = await client.call_tool("read_file", {"path": "README.md"})
            listed = await client.call_tool("list_directory", {})
            found = await client.call_tool("find_files", {"glob": "*"})
            searched = await client.call_tool("search_files", {"pattern": "e"})
            resources = sorted(r.name for r in await all_resources(client))
            if conn.modern:
                assert roots.asked == 0
                assert readme.is_error is False and text_of(readme) == README, readme
                assert resources == sorted(LISTED)
                return
            assert roots.asked >= 1
            assert readme.is_error is True, readme
            assert "is outside the roots the client gave" in text_of(readme) and in_force in text_of(readme), readme
            main = await client.call_tool("read_file", {"path": "src/main.py"})
            assert main.is_error is False and text_of(main) == MAIN_PY, main
            assert [e["path"] for e in listed.structured_content["entries"]] == ["docs", "src"], listed
            assert found.structured_content["files"] == ["docs/guide.txt", "src/main.py", "src/util.py"], found
            assert {m["path"] for m in searched.structured_content["matches"]} == {"docs/guide.txt", "src/main.py", "src/util.py"}, searched
            assert resources == ["docs/guide.txt", "src/main.py", "src/util.py"]
            with pytest.raises(MCPError) as refused:
                await client.read_resource(tree.uri("README.md"))
            assert in_force in refused.value.message, refused.value
            guide = await client.read_resource(tree.uri("docs/guide.txt"))
            assert isinstance(guide.contents[0], TextResourceContents) and guide.contents[0].text == GUIDE
            completed = await client.complete(PromptReference(name="review_file"), {"name": "path", "value": ""})
            assert completed.completion.values == ["docs/guide.txt", "src/main.py", "src/util.py"], completed


@pytest.mark.filterwarnings("ignore:The roots capability is deprecated")
@connections(LEGACY)
async def test_client_roots_list_changed_refetch(connect, conn: Connection, tree: Tree) -> None:
    """When the client says its roots changed (`notifications/roots/list_changed`), duet asks
    again and serves the new set."""
    roots = Roots([tree.uri("src")])
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, tree.root, list_roots_callback=roots) as served:
            client = served.client
            guide = await client.call_tool("read_file", {"path": "docs/guide.txt"})
            assert guide.is_error is True and f"are {tree.root}/src" in text_of(guide), guide
            assert (await client.call_tool("read_file", {"path": "src/util.py"})).is_error is False
            asked = roots.asked

            roots.uris = [tree.uri("docs")]
            await client.send_roots_list_changed()
            guide = await client.call_tool("read_file", {"path": "docs/guide.txt"})
            assert guide.is_error is False and text_of(guide) == GUIDE, guide
            assert roots.asked == asked + 1
            util = await client.call_tool("read_file", {"path": "src/util.py"})
            assert util.is_error is True and f"are {tree.root}/docs" in text_of(util), util
            assert sorted(r.name for r in await all_resources(client)) == ["docs/guide.txt"]
