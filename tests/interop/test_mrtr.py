"""Multi round-trip requests (MRTR) with the official Python SDK client (`mcp` 2.3.0).

A duet handler asks the client for input (an elicitation form, a sampling request, the roots).
duet carries that over either era:

- handshake era (`mode="legacy"`, 2025-11-25): duet sends real server→client requests
  (`elicitation/create`, `sampling/createMessage`, `roots/list`) over the request's channel
  (stdio stdout, the POST's SSE stream on Streamable HTTP, the legacy SSE stream) and resumes
  the handler with the client's answer;
- 2026-07-28 (`mode="auto"`): duet answers `resultType: "input_required"` with
  `inputRequests` and a sealed `requestState`; the SDK (2.3.0 resolves these itself) calls
  the same callbacks and retries with `inputResponses` + `requestState`.

The SDK's callbacks get a `ClientRequestContext` whose `request_id` tells the two paths apart:
the JSON-RPC id of duet's request on the handshake era, the `inputRequests` key on 2026-07-28.

The last section drives the 2026-07-28 wire with raw HTTP (the SDK never alters a
`requestState`, so the tamper / replay checks need a hand-made client), and the handshake-era
wire to check that the question rides the POST's own SSE stream.

Every test starts its own duet (conftest's `duet_factory` for HTTP, the SDK's stdio client for
stdio) and stops it; every wait is bounded.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import pytest
from conftest import DUET_BIN, HANDSHAKE, MODERN, Connection
from modern_wire import (
    BIG_REFUND,
    CONFIRMED,
    ORDER,
    READ_TIMEOUT,
    ask_refund,
    messages_of,
    raw_modern,
    refunded,
    sse_messages,
    tampered,
)
from mcp import Client, InputRequiredRoundsExceededError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp_types import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    ListRootsResult,
    Root,
    TextContent,
)

pytestmark = pytest.mark.anyio

TEST_DEADLINE = 30.0
"""Seconds any one test body may take."""

SMALL_REFUND = {"order_id": ORDER, "amount_cents": 500}

REFUND_ID = re.compile(r"R-\d+")


# ---------------------------------------------------------------------------------------------
# Connections




STDIO_LEGACY = Connection("stdio", "legacy")
HTTP_LEGACY = Connection("http", "legacy")
SSE_LEGACY = Connection("sse", "legacy")
STDIO_AUTO = Connection("stdio", "auto")
HTTP_AUTO = Connection("http", "auto")

LEGACY = {"stdio-legacy": STDIO_LEGACY, "http-legacy": HTTP_LEGACY, "sse-legacy": SSE_LEGACY}
MODERN_CONNECTIONS = {"stdio-auto": STDIO_AUTO, "http-auto": HTTP_AUTO}
ALL = {**LEGACY, **MODERN_CONNECTIONS}


def connections(table: dict[str, Connection]):
    return pytest.mark.parametrize("conn", list(table.values()), ids=list(table))


@pytest.fixture
def connect(duet_factory, tmp_path):
    """`connect(conn, fixtures, **options)`: an entered SDK client on a fresh duet.

    HTTP servers are started (and stopped at teardown) by conftest's `duet_factory`; a stdio
    server is spawned by the SDK's stdio client, which stops it when the client exits. Its
    stderr goes to a file under tmp_path (shown by `stdio_stderr()` in failure messages).
    """
    logs: list[Any] = []

    @asynccontextmanager
    async def open_client(conn: Connection, fixtures: str = "testkit", **options: Any) -> AsyncIterator[Client]:
        if conn.transport == "stdio":
            log = open(tmp_path / f"duet-stdio-{len(logs)}.log", "w")  # noqa: SIM115 - closed below
            logs.append(log)
            params = StdioServerParameters(command=DUET_BIN, args=["serve", "--fixtures", fixtures])
            target: Any = stdio_client(params, errlog=log)
        else:
            server = duet_factory(transport=conn.transport, fixtures=fixtures)
            target = sse_client(server.sse_url) if conn.transport == "sse" else server.url
        async with Client(target, mode=conn.mode, read_timeout_seconds=READ_TIMEOUT, **options) as client:
            assert client.protocol_version == conn.version
            yield client

    try:
        yield open_client
    finally:
        for log in logs:
            log.close()


def text_of(result: CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, TextContent), content
    return content.text


def path_key(conn: Connection, key: str) -> Callable[[Any], bool]:
    """Whether a callback's `request_id` shows the path `conn` must take: the inputRequests
    key on 2026-07-28, duet's own JSON-RPC request id (not the key) on the handshake era."""
    return (lambda rid: rid == key) if conn.modern else (lambda rid: rid != key)


@dataclass
class Elicitor:
    """An elicitation callback that answers with `answer(params)` and records every call."""

    answer: Callable[[ElicitRequestParams], ElicitResult]
    calls: list[tuple[Any, ElicitRequestParams]] = field(default_factory=list)

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        self.calls.append((context.request_id, params))
        return self.answer(params)


def accept(content: dict[str, Any]) -> Callable[[ElicitRequestParams], ElicitResult]:
    return lambda _: ElicitResult(action="accept", content=content)


# ---------------------------------------------------------------------------------------------
# refund_order (testkit): the confirmation over every connection


@connections(ALL)
async def test_big_refund_is_confirmed_then_paid(connect, conn: Connection) -> None:
    elicitor = Elicitor(accept({"ok": True}))
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, elicitation_callback=elicitor) as client:
            result = await client.call_tool("refund_order", BIG_REFUND)
    assert result.is_error is False, result
    assert text_of(result).startswith("Refunded 250.00 USD, ref R-")
    structured = result.structured_content
    assert structured is not None and set(structured) == {"refund_id", "amount_cents"}, structured
    assert REFUND_ID.fullmatch(structured["refund_id"]), structured
    assert structured["amount_cents"] == 25_000
    assert text_of(result) == f"Refunded 250.00 USD, ref {structured['refund_id']}"
    [(request_id, params)] = elicitor.calls
    assert path_key(conn, "confirm")(request_id), (conn, request_id)
    assert isinstance(params, ElicitRequestFormParams), params
    assert "250.00" in params.message and ORDER in params.message, params.message
    assert params.requested_schema["type"] == "object"
    assert params.requested_schema["properties"]["ok"] == {"type": "boolean"}


@pytest.mark.parametrize("action", ["decline", "cancel"])
@connections(ALL)
async def test_big_refund_declined_is_cancelled(connect, conn: Connection, action: str) -> None:
    elicitor = Elicitor(lambda _: ElicitResult(action=action))
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, elicitation_callback=elicitor) as client:
            result = await client.call_tool("refund_order", BIG_REFUND)
            # Nothing was refunded: the next (small) refund is the first one.
            small = await client.call_tool("refund_order", SMALL_REFUND)
    assert result.is_error is False, result
    assert text_of(result) == "Refund cancelled by the user."
    assert result.structured_content is None
    assert len(elicitor.calls) == 1
    assert small.structured_content == {"refund_id": "R-1", "amount_cents": 500}


@connections(ALL)
async def test_accepting_without_ok_does_not_refund(connect, conn: Connection) -> None:
    """An accepted form whose `ok` is false is no confirmation."""
    elicitor = Elicitor(accept({"ok": False}))
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, elicitation_callback=elicitor) as client:
            result = await client.call_tool("refund_order", BIG_REFUND)
    assert text_of(result) == "Refund cancelled by the user."
    assert len(elicitor.calls) == 1


@connections(ALL)
async def test_small_refund_asks_nothing(connect, conn: Connection) -> None:
    elicitor = Elicitor(accept({"ok": True}))
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, elicitation_callback=elicitor) as client:
            result = await client.call_tool("refund_order", SMALL_REFUND)
    assert result.is_error is False, result
    assert text_of(result) == "Refunded 5.00 USD, ref R-1"
    assert result.structured_content == {"refund_id": "R-1", "amount_cents": 500}
    assert elicitor.calls == []


@connections(ALL)
async def test_big_refund_without_elicitation_capability_fails(connect, conn: Connection) -> None:
    """No elicitation callback: the SDK declares no elicitation capability, so duet must not
    ask (no request, no input_required) and the tool answers with an error instead."""
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn) as client:
            result = await client.call_tool("refund_order", BIG_REFUND)
            # Nothing was refunded.
            small = await client.call_tool("refund_order", SMALL_REFUND)
    assert result.is_error is True, result
    assert "need user confirmation" in text_of(result), text_of(result)
    assert "cannot ask" in text_of(result)
    assert small.structured_content == {"refund_id": "R-1", "amount_cents": 500}


@connections(ALL)
async def test_confirmed_refunds_in_a_row(connect, conn: Connection) -> None:
    """Two confirmed refunds of different orders on one connection: each asks once and gets its
    own refund id (the bridge / the retry resumes the right request)."""
    elicitor = Elicitor(accept({"ok": True}))
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, elicitation_callback=elicitor) as client:
            first = await client.call_tool("refund_order", BIG_REFUND)
            second = await client.call_tool("refund_order", {"order_id": "B-7", "amount_cents": 12_345})
    assert first.structured_content == {"refund_id": "R-1", "amount_cents": 25_000}
    assert second.structured_content == {"refund_id": "R-2", "amount_cents": 12_345}
    assert text_of(second) == "Refunded 123.45 USD, ref R-2"
    messages = [params.message for _, params in elicitor.calls]
    assert messages == ["Refund 250.00 USD on A-1042?", "Refund 123.45 USD on B-7?"]


# ---------------------------------------------------------------------------------------------
# Sampling, roots, several rounds (conformance fixtures)


@connections(ALL)
async def test_sampling(connect, conn: Connection) -> None:
    seen: list[tuple[Any, CreateMessageRequestParams]] = []

    async def sample(context: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        seen.append((context.request_id, params))
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="Paris, of course."), model="interop-model"
        )

    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, "conformance", sampling_callback=sample) as client:
            result = await client.call_tool("test_sampling", {"prompt": "What is the capital of France?"})
    assert result.is_error is False, result
    assert text_of(result) == "LLM response: Paris, of course."
    [(request_id, params)] = seen
    assert path_key(conn, "completion")(request_id), (conn, request_id)
    assert params.max_tokens == 100
    [message] = params.messages
    assert message.role == "user"
    assert isinstance(message.content, TextContent) and message.content.text == "What is the capital of France?"


@connections(ALL)
async def test_sampling_without_capability_fails(connect, conn: Connection) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, "conformance") as client:
            result = await client.call_tool("test_sampling", {"prompt": "Hi?"})
    assert result.is_error is True, result
    assert "sampling" in text_of(result)


@connections(ALL)
async def test_list_roots(connect, conn: Connection) -> None:
    seen: list[Any] = []

    async def roots(context: Any) -> ListRootsResult:
        seen.append(context.request_id)
        return ListRootsResult(
            roots=[Root(uri="file:///work/project", name="project"), Root(uri="file:///srv/data")]
        )

    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, "conformance", list_roots_callback=roots) as client:
            result = await client.call_tool("test_input_required_result_list_roots", {})
    assert result.is_error is False, result
    assert text_of(result) == "Received client_roots: file:///work/project, file:///srv/data"
    [request_id] = seen
    assert path_key(conn, "client_roots")(request_id), (conn, request_id)


def two_step_answers(params: ElicitRequestParams) -> ElicitResult:
    if params.message.startswith("Step 1"):
        return ElicitResult(action="accept", content={"name": "Alice"})
    assert params.message.startswith("Step 2"), params.message
    return ElicitResult(action="accept", content={"color": "blue"})


@connections(ALL)
async def test_multi_round(connect, conn: Connection) -> None:
    """Two questions in two rounds; the second round's state carries the first answer."""
    elicitor = Elicitor(two_step_answers)
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, "conformance", elicitation_callback=elicitor) as client:
            result = await client.call_tool("test_input_required_result_multi_round", {})
    assert result.is_error is False, result
    assert text_of(result) == "Alice likes blue"
    assert [params.message for _, params in elicitor.calls] == [
        "Step 1: What is your name?",
        "Step 2: What is your favorite color?",
    ]
    keys = ["step1", "step2"]
    assert all(path_key(conn, key)(rid) for key, (rid, _) in zip(keys, elicitor.calls, strict=True)), elicitor.calls


@connections(ALL)
async def test_multiple_inputs_in_one_round(connect, conn: Connection) -> None:
    """A name, a model's greeting and the roots asked at once (concurrent requests on the
    handshake era, one inputRequests map on 2026-07-28)."""
    elicitor = Elicitor(accept({"name": "Alice"}))

    async def sample(context: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Hello there!"), model="m")

    async def roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///a")])

    options = {"elicitation_callback": elicitor, "sampling_callback": sample, "list_roots_callback": roots}
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, "conformance", **options) as client:
            result = await client.call_tool("test_input_required_result_multiple_inputs", {})
    assert result.is_error is False, result
    assert text_of(result) == (
        'Received client_roots: file:///a; greeting: Hello there!; user_name: {"name":"Alice"}'
    )
    assert len(elicitor.calls) == 1


# ---------------------------------------------------------------------------------------------
# 2026-07-28 through the SDK: the input_required result itself, and a hand-driven retry


@connections(MODERN_CONNECTIONS)
async def test_modern_input_required_then_manual_retry(connect, conn: Connection) -> None:
    """`session.call_tool(..., allow_input_required=True)` shows duet's input_required result;
    retrying by hand with the answer and the exact requestState completes the refund."""
    elicitor = Elicitor(accept({"ok": True}))  # declares the capability; not called on this path
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, elicitation_callback=elicitor) as client:
            first = await client.session.call_tool("refund_order", BIG_REFUND, allow_input_required=True)
            assert isinstance(first, InputRequiredResult), first
            assert first.input_requests is not None and set(first.input_requests) == {"confirm"}
            request = first.input_requests["confirm"]
            assert request.method == "elicitation/create"
            assert isinstance(request.params, ElicitRequestFormParams)
            assert request.params.message == "Refund 250.00 USD on A-1042?"
            assert isinstance(first.request_state, str) and first.request_state
            # The requestState is opaque: it must not show what it binds.
            assert ORDER not in first.request_state and "confirm" not in first.request_state

            # An answer without the state is not trusted: duet asks again.
            answers = {"confirm": ElicitResult(action="accept", content={"ok": True})}
            unsealed = await client.session.call_tool(
                "refund_order", BIG_REFUND, input_responses=answers, allow_input_required=True
            )
            assert isinstance(unsealed, InputRequiredResult), unsealed

            done = await client.session.call_tool(
                "refund_order", BIG_REFUND, input_responses=answers, request_state=first.request_state
            )
    assert done.is_error is False, done
    assert done.structured_content == {"refund_id": "R-1", "amount_cents": 25_000}
    assert text_of(done) == "Refunded 250.00 USD, ref R-1"
    assert elicitor.calls == []


@connections(MODERN_CONNECTIONS)
async def test_modern_rounds_stop_at_the_cap(connect, conn: Connection) -> None:
    """An answer the tool cannot use makes it ask again; the SDK gives up after its cap."""
    elicitor = Elicitor(accept({"wrong": "field"}))
    with anyio.fail_after(TEST_DEADLINE):
        async with connect(conn, "conformance", elicitation_callback=elicitor, input_required_max_rounds=3) as client:
            with pytest.raises(InputRequiredRoundsExceededError):
                await client.call_tool("test_input_required_result_multi_round", {})
    assert len(elicitor.calls) == 3
    assert {params.message for _, params in elicitor.calls} == {"Step 1: What is your name?"}


# ---------------------------------------------------------------------------------------------
# Raw HTTP


async def test_raw_modern_round_trip(duet_factory) -> None:
    server = duet_factory()
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(server.url) as raw:
            state = await ask_refund(raw)
            done = await raw.tool("refund_order", BIG_REFUND, inputResponses=CONFIRMED, requestState=state)
            assert refunded(done) == {"refund_id": "R-1", "amount_cents": 25_000}
            assert done["result"]["content"] == [{"type": "text", "text": "Refunded 250.00 USD, ref R-1"}]
            # Replaying the same retry is not a second refund (at most once per order and amount).
            again = await raw.tool("refund_order", BIG_REFUND, inputResponses=CONFIRMED, requestState=state)
            assert refunded(again) == {"refund_id": "R-1", "amount_cents": 25_000}


async def test_raw_modern_decline(duet_factory) -> None:
    server = duet_factory()
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(server.url) as raw:
            state = await ask_refund(raw)
            declined = {"confirm": {"action": "decline"}}
            done = await raw.tool("refund_order", BIG_REFUND, inputResponses=declined, requestState=state)
    assert "error" not in done, done
    assert done["result"]["isError"] is False
    assert done["result"]["content"] == [{"type": "text", "text": "Refund cancelled by the user."}]


async def test_raw_modern_answers_without_state_are_not_trusted(duet_factory) -> None:
    server = duet_factory()
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(server.url) as raw:
            again = await raw.tool("refund_order", BIG_REFUND, inputResponses=CONFIRMED)
            assert again["result"]["resultType"] == "input_required", again
            # And nothing was refunded: the first real refund is R-1.
            small = await raw.tool("refund_order", SMALL_REFUND)
    assert refunded(small) == {"refund_id": "R-1", "amount_cents": 500}


async def test_raw_modern_without_elicitation_capability(duet_factory) -> None:
    server = duet_factory()
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(server.url, capabilities={}) as raw:
            answer = await raw.tool("refund_order", BIG_REFUND)
    assert "error" not in answer, answer
    result = answer["result"]
    assert result.get("resultType", "complete") == "complete", result
    assert result["isError"] is True
    assert "need user confirmation" in result["content"][0]["text"]


async def test_raw_modern_tampered_state_is_refused(duet_factory) -> None:
    server = duet_factory()
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(server.url) as raw:
            state = await ask_refund(raw)
            bad = await raw.tool("refund_order", BIG_REFUND, inputResponses=CONFIRMED, requestState=tampered(state))
            garbage = await raw.tool("refund_order", BIG_REFUND, inputResponses=CONFIRMED, requestState="not base64!")
            # The untouched state still works afterwards, and nothing was refunded before it.
            done = await raw.tool("refund_order", BIG_REFUND, inputResponses=CONFIRMED, requestState=state)
    assert "result" not in bad, bad
    assert bad["error"]["code"] == -32602, bad
    assert "integrity check" in bad["error"]["message"], bad
    assert garbage["error"]["code"] == -32602, garbage
    assert "requestState" in garbage["error"]["message"], garbage
    assert refunded(done) == {"refund_id": "R-1", "amount_cents": 25_000}


async def test_raw_modern_state_replayed_with_other_arguments_is_refused(duet_factory) -> None:
    server = duet_factory()
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(server.url) as raw:
            state = await ask_refund(raw)
            other = {"order_id": ORDER, "amount_cents": 99_999}
            replay = await raw.tool("refund_order", other, inputResponses=CONFIRMED, requestState=state)
            other_order = {"order_id": "Z-1", "amount_cents": 25_000}
            replay_order = await raw.tool("refund_order", other_order, inputResponses=CONFIRMED, requestState=state)
            # A state sealed for refund_order is no good for another tool either.
            echo = await raw.tool("echo", {"text": "x"}, inputResponses=CONFIRMED, requestState=state)
    for refused in (replay, replay_order):
        assert "result" not in refused, refused
        assert refused["error"]["code"] == -32602, refused
        assert "different arguments" in refused["error"]["message"], refused
    assert "result" not in echo, echo
    assert echo["error"]["code"] == -32602, echo
    assert "another request" in echo["error"]["message"], echo


async def test_raw_modern_multi_round_carries_fresh_state(duet_factory) -> None:
    """Each round's requestState is new; the last one completes."""
    server = duet_factory(fixtures="conformance")
    name = "test_input_required_result_multi_round"
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(server.url) as raw:
            first = (await raw.tool(name, {}))["result"]
            assert first["resultType"] == "input_required" and set(first["inputRequests"]) == {"step1"}, first
            step1 = {"step1": {"action": "accept", "content": {"name": "Alice"}}}
            second = (await raw.tool(name, {}, inputResponses=step1, requestState=first["requestState"]))["result"]
            assert second["resultType"] == "input_required" and set(second["inputRequests"]) == {"step2"}, second
            assert second["requestState"] != first["requestState"]
            step2 = {"step2": {"action": "accept", "content": {"color": "blue"}}}
            done = await raw.tool(name, {}, inputResponses=step2, requestState=second["requestState"])
    assert "error" not in done, done
    assert done["result"]["content"] == [{"type": "text", "text": "Alice likes blue"}]


# Handshake era, raw: the question rides the POST's own SSE stream.


async def test_raw_handshake_elicitation_on_the_post_stream(duet_factory) -> None:
    server = duet_factory()
    accept_both = {"Accept": "application/json, text/event-stream"}
    with anyio.fail_after(TEST_DEADLINE):
        async with httpx2.AsyncClient(timeout=READ_TIMEOUT) as http:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": HANDSHAKE,
                    "capabilities": {"elicitation": {}},
                    "clientInfo": {"name": "raw-interop", "version": "0"},
                },
            }
            response = await http.post(server.url, json=init, headers=accept_both)
            assert response.status_code == 200, response.text
            [initialized] = [m for m in messages_of(response) if m.get("id") == 1]
            assert initialized["result"]["protocolVersion"] == HANDSHAKE
            headers = {
                **accept_both,
                "Mcp-Session-Id": response.headers["mcp-session-id"],
                "MCP-Protocol-Version": HANDSHAKE,
            }
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(server.url, json=note, headers=headers)).status_code == 202

            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
            call["params"] = {"name": "refund_order", "arguments": BIG_REFUND}
            async with http.stream("POST", server.url, json=call, headers=headers) as stream:
                assert stream.status_code == 200
                assert stream.headers["content-type"].startswith("text/event-stream")
                messages = sse_messages(stream)
                ask = await messages.__anext__()
                assert ask.get("method") == "elicitation/create", ask
                assert "id" in ask and ask["id"] != 2, ask
                assert "250.00" in ask["params"]["message"]
                assert ask["params"]["requestedSchema"]["properties"]["ok"] == {"type": "boolean"}
                reply = {"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"ok": True}}}
                posted = await http.post(server.url, json=reply, headers=headers)
                assert posted.status_code == 202, (posted.status_code, posted.text)
                done = await messages.__anext__()
    assert done.get("id") == 2, done
    assert done["result"]["structuredContent"] == {"refund_id": "R-1", "amount_cents": 25_000}
    assert done["result"]["content"] == [{"type": "text", "text": "Refunded 250.00 USD, ref R-1"}]
