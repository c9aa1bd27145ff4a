"""The official Python SDK client (`mcp` 2.3.0) against `duet serve --fixtures testkit` over HTTP.

Connections exercised:
- streamable HTTP, `mode="legacy"`: the initialize handshake at 2025-11-25;
- streamable HTTP, `mode="auto"`: `server/discover`, then per-request 2026-07-28 envelopes;
- the deprecated HTTP+SSE transport (`--transport sse`, `/sse`) through the SDK's `sse_client`;
- streamable HTTP with `--stateless`, `mode="legacy"`.

Every wait is bounded (`anyio.fail_after`, plus the client's read timeout).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from conftest import EVENT_DEADLINE, HANDSHAKE, MODERN, Inbox
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged
from mcp_types import (
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceTemplateReference,
    ResourceUpdatedNotification,
    TextContent,
    TextResourceContents,
    ToolListChangedNotification,
)

if TYPE_CHECKING:
    from conftest import DuetServer

pytestmark = pytest.mark.anyio

TEST_DEADLINE = 30.0
"""Seconds any one test body may take."""

READ_TIMEOUT = 10.0
"""The client's per-request read timeout, in seconds."""

ECHO_INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The text to repeat"},
        "times": {
            "type": "integer",
            "minimum": 1,
            "maximum": 5,
            "default": 1,
            "description": "How many times (1 to 5)",
        },
    },
    "required": ["text"],
    "additionalProperties": False,
}
"""The echo tool's inputSchema as crates/duet/src/fixtures/testkit.rs defines it."""

ITEM_TEMPLATE = "test://items/{item_id}"


# ---------------------------------------------------------------------------------------------
# Connections


@dataclass(frozen=True)
class Connection:
    """How to start duet and how the SDK client connects to it."""

    transport: str = "http"
    flags: tuple[str, ...] = ()
    mode: str = "legacy"
    sse: bool = False
    """Connect through the SDK's legacy `sse_client` to /sse instead of the MCP endpoint."""
    version: str = HANDSHAKE
    """The protocol version the client must end up with."""


HTTP_LEGACY = Connection()
HTTP_AUTO = Connection(mode="auto", version=MODERN)
SSE_LEGACY = Connection(transport="sse", sse=True)
STATELESS_LEGACY = Connection(flags=("--stateless",))

ALL_CONNECTIONS = {
    "http-legacy": HTTP_LEGACY,
    "http-auto": HTTP_AUTO,
    "sse-legacy": SSE_LEGACY,
    "stateless-legacy": STATELESS_LEGACY,
}
FULL_CONNECTIONS = {k: v for k, v in ALL_CONNECTIONS.items() if k != "stateless-legacy"}
"""The stateless server is only asked to list tools and call echo (see test_stateless_*)."""


def connections(table: dict[str, Connection]):
    return pytest.mark.parametrize("conn", list(table.values()), ids=list(table))


@pytest.fixture
def start(duet_factory) -> Callable[[Connection], DuetServer]:
    """Start the duet server a connection needs (stopped at teardown by duet_factory)."""

    def start(conn: Connection) -> DuetServer:
        return duet_factory(*conn.flags, transport=conn.transport)

    return start


@asynccontextmanager
async def open_client(server: DuetServer, conn: Connection, **options: Any) -> AsyncIterator[Client]:
    """An entered SDK client for `conn`, checked to have negotiated the expected version."""
    target = sse_client(server.sse_url) if conn.sse else server.url
    async with Client(target, mode=conn.mode, read_timeout_seconds=READ_TIMEOUT, **options) as client:
        assert client.protocol_version == conn.version
        yield client




async def next_event(subscription) -> Any:
    """The next event of a `client.listen(...)` subscription, within EVENT_DEADLINE."""
    with anyio.fail_after(EVENT_DEADLINE):
        return await subscription.__anext__()


def text_of(result) -> str:
    """The text of the first content block (tool results, prompt messages)."""
    content = result.content[0] if isinstance(result.content, list) else result.content
    assert isinstance(content, TextContent), content
    return content.text


# ---------------------------------------------------------------------------------------------
# The same checks over every full connection


@connections(ALL_CONNECTIONS)
async def test_handshake_and_server_info(start, conn: Connection) -> None:
    server = start(conn)
    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, conn) as client:
            assert client.protocol_version == conn.version
            assert client.server_info is not None
            assert client.server_info.name == "duet-testkit"
            capabilities = client.server_capabilities
            assert capabilities.tools is not None
            assert capabilities.resources is not None
            assert capabilities.prompts is not None
            assert capabilities.completions is not None


@connections(FULL_CONNECTIONS)
async def test_list_tools(start, conn: Connection) -> None:
    server = start(conn)
    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, conn) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"echo", "stats", "slow"} <= set(tools)
            echo = tools["echo"]
            assert echo.input_schema == ECHO_INPUT_SCHEMA
            assert echo.title == "Echo"
            assert echo.output_schema == {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            }
            assert echo.annotations is not None
            assert echo.annotations.read_only_hint is True
            assert echo.annotations.destructive_hint is False
            assert echo.annotations.idempotent_hint is True
            assert echo.annotations.open_world_hint is False


@connections(FULL_CONNECTIONS)
async def test_call_echo(start, conn: Connection) -> None:
    server = start(conn)
    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, conn) as client:
            result = await client.call_tool("echo", {"text": "ab", "times": 2})
            assert result.is_error is False
            assert result.structured_content == {"text": "abab"}


@connections(FULL_CONNECTIONS)
async def test_call_slow_reports_progress(start, conn: Connection) -> None:
    server = start(conn)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, conn) as client:
            result = await client.call_tool("slow", {}, progress_callback=on_progress)
            assert result.is_error is False
            assert result.structured_content == {"done": 3}
    assert [progress for progress, _, _ in seen] == [1, 2, 3]
    assert seen[1] == (2, 3, "step 2")


@connections(FULL_CONNECTIONS)
async def test_tool_errors(start, conn: Connection) -> None:
    server = start(conn)
    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, conn) as client:
            failed = await client.call_tool("fail", {})
            assert failed.is_error is True
            assert text_of(failed) == "boom"
            invalid = await client.call_tool("echo", {"text": "ab", "times": 99})
            assert invalid.is_error is True
            assert invalid.structured_content is None


@connections(FULL_CONNECTIONS)
async def test_read_item(start, conn: Connection) -> None:
    server = start(conn)
    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, conn) as client:
            result = await client.read_resource("test://items/gamma")
            [contents] = result.contents
            assert isinstance(contents, TextResourceContents)
            assert contents.uri == "test://items/gamma"
            assert contents.mime_type == "application/json"
            assert "gamma" in contents.text


@connections(FULL_CONNECTIONS)
async def test_get_prompt(start, conn: Connection) -> None:
    server = start(conn)
    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, conn) as client:
            result = await client.get_prompt("greet", {"name": "Zed", "style": "formal"})
            [message] = result.messages
            assert message.role == "user"
            assert text_of(message) == "Good day, Zed."


@connections(FULL_CONNECTIONS)
async def test_complete(start, conn: Connection) -> None:
    server = start(conn)
    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, conn) as client:
            name = await client.complete(PromptReference(name="greet"), {"name": "name", "value": "g"})
            assert name.completion.values == ["gamma"]
            item = await client.complete(
                ResourceTemplateReference(uri=ITEM_TEMPLATE), {"name": "item_id", "value": "a"}
            )
            assert item.completion.values == ["alpha"]


# ---------------------------------------------------------------------------------------------
# Change notifications


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
@connections({"http-legacy": HTTP_LEGACY, "sse-legacy": SSE_LEGACY})
async def test_legacy_subscribe_then_touch(start, conn: Connection) -> None:
    """Handshake era: resources/subscribe, then `touch` → notifications/resources/updated for
    the subscribed URI, and notifications/tools/list_changed, on the session's stream."""
    server = start(conn)
    inbox = Inbox()
    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, conn, message_handler=inbox.handler) as client:
            await client.subscribe_resource("test://info")
            touched = await client.call_tool("touch", {})
            assert text_of(touched) == "touched test://info"
            updated = await inbox.wait_for(lambda m: isinstance(m, ResourceUpdatedNotification))
            assert updated.params.uri == "test://info"
            await inbox.wait_for(lambda m: isinstance(m, ToolListChangedNotification))


async def test_auto_listen_tools_list_changed(start) -> None:
    """2026-07-28: subscriptions/listen for tool list changes, then `touch` → ToolsListChanged."""
    server = start(HTTP_AUTO)
    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, HTTP_AUTO) as client:
            async with client.listen(tools_list_changed=True) as subscription:
                assert subscription.honored.tools_list_changed is True
                await client.call_tool("touch", {})
                assert await next_event(subscription) == ToolsListChanged()


async def test_auto_listen_resource_updated(start) -> None:
    """2026-07-28: a listen filter naming test://info gets ResourceUpdated after `touch`."""
    server = start(HTTP_AUTO)
    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, HTTP_AUTO) as client:
            async with client.listen(resource_subscriptions=["test://info"]) as subscription:
                assert subscription.honored.resource_subscriptions == ["test://info"]
                # Not asked for: the server must not send tool list changes on this stream.
                assert not subscription.honored.tools_list_changed
                await client.call_tool("touch", {})
                assert await next_event(subscription) == ResourceUpdated(uri="test://info")


# ---------------------------------------------------------------------------------------------
# 2026-07-28 per-request logging


@pytest.mark.parametrize(("level", "expected_steps"), [("info", [1, 2, 3]), ("warning", []), (None, [])])
async def test_auto_logs_only_when_opted_in(start, level: str | None, expected_steps: list[int]) -> None:
    """2026-07-28: `slow` logs at info; logs arrive only when the request opts in at or below info."""
    server = start(HTTP_AUTO)
    logs: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, HTTP_AUTO, logging_callback=on_log, log_level=level) as client:
            result = await client.call_tool("slow", {})
            assert result.structured_content == {"done": 3}
    assert [log.data for log in logs] == [{"step": step} for step in expected_steps]
    assert all(log.level == "info" for log in logs)


# ---------------------------------------------------------------------------------------------
# Stateless server


async def test_stateless_list_tools_and_echo(start) -> None:
    server = start(STATELESS_LEGACY)
    with anyio.fail_after(TEST_DEADLINE):
        async with open_client(server, STATELESS_LEGACY) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"echo", "stats", "slow"} <= set(tools)
            assert tools["echo"].input_schema == ECHO_INPUT_SCHEMA
            result = await client.call_tool("echo", {"text": "ab", "times": 2})
            assert result.is_error is False
            assert result.structured_content == {"text": "abab"}
