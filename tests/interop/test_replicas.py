"""Three duet replicas sharing a Redis backplane behind nginx round-robin (see cluster.py):
any replica answers any 2026-07-28 request. A multi round-trip refund is asked on one replica
and confirmed on another (the state key is shared), and its replays, concurrent on every
replica, pay once (the idempotency key is in Redis); one confirmation of a manifest's
`confirm = "…"` command runs it once, wherever it is sent (the spent state is in Redis); a
listen stream held by one replica gets
every change raised on any of them, once; a legacy SSE session's POSTs reach the replica
holding its stream; a broken stream is picked up on another replica with Last-Event-ID;
Redis lost mid-run fails what needs it, fast and clearly, keeps the rest serving, and is
mended when Redis returns.
"""

from __future__ import annotations

import json
import time

import anyio
import httpx2
import pytest
from cluster import Cluster, cluster, cluster_factory  # noqa: F401 - the fixtures
from conftest import HANDSHAKE, MODERN, Inbox
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.subscriptions import ToolsListChanged
from mcp_types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    ResourceUpdatedNotification,
    TextContent,
    ToolListChangedNotification,
)
from modern_wire import BIG_REFUND, CONFIRMED, READ_TIMEOUT, ask_refund, raw_modern, refunded

pytestmark = pytest.mark.anyio

TEST_DEADLINE = 60.0
"""Seconds any one test body may take."""

CHANGES = 100
CHANGES_DEADLINE = 5.0
"""Seconds the last of the changes may take to reach the listen stream."""

PAID = "refund paid"
"""What the testkit logs (at INFO) each time a refund is paid."""

SETTLE = 1.0
"""Seconds to wait for anything more (a doubled event, a second payment) to show up."""

ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}  # fmt: skip


async def raw_session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """A 2025-11-25 session made with raw HTTP at `url`: the headers its requests carry."""
    made = await http.post(url, json=INITIALIZE, headers=ACCEPT)
    assert made.status_code == 200, made.text
    return {**ACCEPT, "Mcp-Session-Id": made.headers["mcp-session-id"], "MCP-Protocol-Version": HANDSHAKE}


async def replay_everywhere(
    cluster: Cluster, state: str, tool: str = "refund_order", arguments: dict = BIG_REFUND
) -> list[dict]:
    """The same confirmed retry of `tool` sent to every replica at once; their answers."""
    answers: list[dict] = []

    async def replay(url: str) -> None:
        async with raw_modern(url) as raw:
            answers.append(await raw.tool(tool, arguments, inputResponses=CONFIRMED, requestState=state))

    async with anyio.create_task_group() as group:
        for server in cluster.replicas:
            group.start_soon(replay, server.url)
    return answers


async def test_a_refund_confirmed_on_another_replica_pays_once(cluster: Cluster) -> None:
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(cluster.url) as raw:
            # Through nginx: the question comes from one replica, the confirmation goes to the
            # next, which opens the state the first sealed.
            state = await ask_refund(raw)
            first = refunded(await raw.tool("refund_order", BIG_REFUND, inputResponses=CONFIRMED, requestState=state))
        assert first["amount_cents"] == 25_000
        for answer in await replay_everywhere(cluster, state):
            assert refunded(answer) == first, "a replay on any replica gets the first refund back"
        await anyio.sleep(SETTLE)
        assert cluster.log_count(PAID) == 1, [s.stderr() for s in cluster.replicas]


async def test_racing_confirmations_pay_once(cluster: Cluster) -> None:
    """The first confirmation sent to all three replicas at the same moment: one pays, the
    others get that refund or are told it is being processed (-31029: the state is being
    spent)."""
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(cluster.replicas[0].url) as raw:
            state = await ask_refund(raw)
        answers = await replay_everywhere(cluster, state)
        refunds = [refunded(a) for a in answers if "result" in a]
        busy = [a["error"] for a in answers if "error" in a]
        assert refunds, answers
        assert all(r == refunds[0] for r in refunds), answers
        assert all(e["code"] == -31029 and "already being processed" in e["message"] for e in busy), busy
        await anyio.sleep(SETTLE)
        assert cluster.log_count(PAID) == 1


STAMP_MANIFEST = """
[server]
name = "stamps"
version = "1"

[[tool]]
name = "stamp"
description = "Appends a line to ran.log and answers how many lines it holds"
command = ["sh", "-c", "echo ran >> ran.log; wc -l < ran.log"]
cwd = "."
confirm = "Append a line?"
"""


async def test_one_confirmation_runs_a_confirmed_command_once_on_any_replica(cluster_factory, tmp_path) -> None:
    """A `confirm = "…"` manifest command asked on one replica, then its one confirmation
    sent to each replica in turn and to all three at once: the command runs once (the first
    replica to take the state records it as spent in Redis) and every replay, wherever it
    lands, gets the first run's answer."""
    manifest = tmp_path / "duet.toml"
    manifest.write_text(STAMP_MANIFEST)
    cluster = cluster_factory("http", None, "--manifest", str(manifest))
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(cluster.replicas[0].url) as raw:
            asked = await raw.tool("stamp", {})
        assert asked["result"]["resultType"] == "input_required", asked
        state = asked["result"]["requestState"]
        answers = []
        for server in cluster.replicas:
            async with raw_modern(server.url) as raw:
                answers.append(await raw.tool("stamp", {}, inputResponses=CONFIRMED, requestState=state))
        answers += await replay_everywhere(cluster, state, "stamp", {})
    first = answers[0]["result"]
    assert first["isError"] is False and first["content"] == [{"type": "text", "text": "1\n"}], answers[0]
    assert all(answer.get("result") == first for answer in answers), answers
    assert (tmp_path / "ran.log").read_text() == "ran\n", "the command ran once"


async def test_a_listen_stream_gets_every_change_of_every_replica_once(cluster: Cluster) -> None:
    """A raw listen stream (the SDK merges repeated events, which would hide a doubled one)
    on one replica, and touches of distinct URIs through nginx: a third of them raised on
    the listener's own replica, which must not deliver again what Redis echoes back."""
    uris = [f"test://items/{n}" for n in range(CHANGES)]
    filter = {"notifications": {"resourceSubscriptions": ["test://items/"]}}
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(cluster.replicas[0].url) as listener, listener.stream(
            "subscriptions/listen", "", filter
        ) as messages:
            first = await messages.__anext__()
            assert first["method"] == "notifications/subscriptions/acknowledged", first
            async with raw_modern(cluster.url) as caller:
                for uri in uris:
                    touched = await caller.tool("touch", {"uri": uri})
                    assert touched["result"]["isError"] is False, touched
            updated: list[str] = []
            with anyio.move_on_after(CHANGES_DEADLINE + SETTLE):
                async for message in messages:
                    assert message["method"] == "notifications/resources/updated", message
                    updated.append(message["params"]["uri"])
    assert sorted(updated) == sorted(uris), f"{len(updated)} events for {CHANGES} changes"


async def test_redis_lost_and_back(cluster: Cluster) -> None:
    """Without Redis, a call that needs no shared state still works and a confirmed refund
    fails within a few seconds saying why, unrun (its state cannot be recorded as spent);
    once Redis is back (empty), both work again, and changes cross replicas again (the
    replicas resubscribed by themselves)."""
    with anyio.fail_after(TEST_DEADLINE):
        cluster.redis.stop()
        async with raw_modern(cluster.url) as raw:
            for _ in range(3):
                echo = await raw.tool("echo", {"text": "still here"})
                assert echo["result"]["isError"] is False, echo
            state = await ask_refund(raw)
            started = time.monotonic()
            failed = await raw.tool("refund_order", BIG_REFUND, inputResponses=CONFIRMED, requestState=state)
            assert time.monotonic() - started < 5, "a refund without Redis must fail fast"
            assert failed["error"]["code"] == -32603, failed
            assert "shared store is unavailable" in failed["error"]["message"], failed
            assert "was not run" in failed["error"]["message"], failed
        cluster.redis.start()
        deadline = time.monotonic() + 15
        async with raw_modern(cluster.url) as raw:
            while True:
                state = await ask_refund(raw)
                answer = await raw.tool("refund_order", BIG_REFUND, inputResponses=CONFIRMED, requestState=state)
                if "result" in answer and not answer["result"]["isError"]:
                    break
                assert time.monotonic() < deadline, f"the refund still fails after Redis came back: {answer}"
                await anyio.sleep(0.5)
        await anyio.sleep(2)  # every replica's watchdog pinged, reconnected and resubscribed
        async with Client(cluster.replicas[0].url, mode="auto", read_timeout_seconds=READ_TIMEOUT) as listener:
            async with listener.listen(tools_list_changed=True) as subscription:
                async with Client(cluster.replicas[1].url, mode="auto", read_timeout_seconds=READ_TIMEOUT) as caller:
                    await caller.call_tool("touch", {})
                with anyio.fail_after(5):
                    assert await subscription.__anext__() == ToolsListChanged()


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
async def test_the_legacy_sse_transport_through_nginx(cluster_factory) -> None:
    """2024-11-05 HTTP+SSE: the stream is held by one replica and the POSTs go round-robin
    to all three (two in three land elsewhere, and would be 404 unrouted); they are routed to
    the holder, so every answer, its progress and a subscribed update arrive on the stream."""
    cluster = cluster_factory("sse")
    inbox = Inbox()
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    with anyio.fail_after(TEST_DEADLINE):
        async with Client(
            sse_client(cluster.sse_url), mode="legacy", read_timeout_seconds=READ_TIMEOUT, message_handler=inbox.handler
        ) as client:
            assert client.protocol_version == HANDSHAKE
            for n in range(6):
                echo = await client.call_tool("echo", {"text": f"hop {n}"})
                assert echo.structured_content == {"text": f"hop {n}"}, echo
            assert "slow" in {tool.name for tool in (await client.list_tools()).tools}
            done = await client.call_tool("slow", {"steps": 3}, progress_callback=on_progress)
            assert done.structured_content == {"done": 3}
            assert progress == [1, 2, 3]
            await client.subscribe_resource("test://info")
            await client.call_tool("touch", {})
            updated = await inbox.wait_for(lambda m: isinstance(m, ResourceUpdatedNotification))
            assert updated.params.uri == "test://info"


async def test_a_legacy_post_for_an_unknown_session_is_404_and_without_redis_503(cluster_factory) -> None:
    """A POST to a replica that does not hold the stream: routed (its answer comes on the
    holder's stream), 404 for a session nobody holds, 503 when Redis cannot say."""
    cluster = cluster_factory("sse")
    holder, other = cluster.replicas[0], cluster.replicas[1]
    with anyio.fail_after(TEST_DEADLINE):
        async with httpx2.AsyncClient(timeout=READ_TIMEOUT) as http:
            async with http.stream("GET", holder.sse_url, headers={"Accept": "text/event-stream"}) as stream:
                lines = stream.aiter_lines()
                endpoint = ""
                async for line in lines:
                    if line.startswith("data:"):
                        endpoint = line[len("data:") :].strip()
                        break
                assert "session_id=" in endpoint, endpoint
                ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
                unknown = await http.post(f"{other.base}/messages/?session_id=0000", json=ping)
                assert unknown.status_code == 404, unknown.text
                init = {
                    "jsonrpc": "2.0", "id": 7, "method": "initialize",
                    "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
                }  # fmt: skip
                routed = await http.post(f"{other.base}{endpoint}", json=init)
                assert routed.status_code == 202, routed.text
                async for line in lines:
                    if line.startswith("data:"):
                        answer = json.loads(line[len("data:") :])
                        assert answer["id"] == 7 and answer["result"]["protocolVersion"] == "2024-11-05", answer
                        break
                cluster.redis.stop()
                lost = await http.post(f"{other.base}{endpoint}", json=ping)
                assert lost.status_code == 503, lost.text
                assert "shared store is unavailable" in lost.text
                local = await http.post(f"{holder.base}{endpoint}", json=ping)
                assert local.status_code == 202, "the holder serves its session without Redis"


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
async def test_a_handshake_session_served_by_every_replica(cluster: Cluster) -> None:
    """2025-11-25 over Streamable HTTP through nginx: the session is made on one replica and
    each later request (and the GET stream) lands on whichever nginx picks; paging, progress,
    a subscription and its update, the log level, and an elicitation whose answer is POSTed
    to another replica than the question."""
    inbox = Inbox()
    logs: list[LoggingMessageNotificationParams] = []
    asked: list[ElicitRequestParams] = []
    progress: list[float] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def confirm(context, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"ok": True})

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    options = {"message_handler": inbox.handler, "logging_callback": on_log, "elicitation_callback": confirm}
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(cluster.url, mode="legacy", read_timeout_seconds=READ_TIMEOUT, **options) as client:
            assert client.protocol_version == HANDSHAKE
            names: list[str] = []
            cursor = None
            while True:
                page = await client.list_tools(cursor=cursor)
                assert len(page.tools) <= 3
                names += [tool.name for tool in page.tools]
                if not (cursor := page.next_cursor):
                    break
            assert {"echo", "slow", "touch", "refund_order"} <= set(names) and len(names) == len(set(names))
            done = await client.call_tool("slow", {"steps": 3}, progress_callback=on_progress)
            assert done.structured_content == {"done": 3} and progress == [1, 2, 3]
            assert [log.data for log in logs] == [{"step": 1}, {"step": 2}, {"step": 3}]
            await client.set_logging_level("error")
            for _ in range(3):  # on every replica: the level is the session's, not one replica's
                await client.call_tool("slow", {"steps": 1})
            assert len(logs) == 3, logs
            await client.subscribe_resource("test://info")
            for _ in range(3):
                await client.call_tool("touch", {})
            updated = await inbox.wait_for(lambda m: isinstance(m, ResourceUpdatedNotification))
            assert updated.params.uri == "test://info"
            await inbox.wait_for(lambda m: isinstance(m, ToolListChangedNotification))
            for n in range(3):
                refund = await client.call_tool("refund_order", {"order_id": f"H-{n}", "amount_cents": 25_000})
                assert refund.is_error is False, refund
            assert len(asked) == 3
    await anyio.sleep(SETTLE)
    assert cluster.log_count(PAID) == 3


async def test_sampling_through_another_replica(cluster_factory) -> None:
    """The conformance fixtures' sampling tool asks the client over the POST's stream; the
    answer is POSTed through nginx and so, two times in three, reaches another replica."""
    cluster = cluster_factory("http", "conformance")

    async def sample(context, params: CreateMessageRequestParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="Paris."), model="m")

    with anyio.fail_after(TEST_DEADLINE):
        async with Client(cluster.url, mode="legacy", read_timeout_seconds=READ_TIMEOUT, sampling_callback=sample) as c:
            for _ in range(3):
                result = await c.call_tool("test_sampling", {"prompt": "Capital of France?"})
                assert result.is_error is False, result
                assert result.content[0].text == "LLM response: Paris."


async def test_a_session_made_on_one_replica_ends_on_all(cluster: Cluster) -> None:
    """Raw: initialize on one replica, a request on a second, the GET stream on the third;
    DELETE on the second ends the stream on the third, and the first then says 404."""
    first, second, third = (server.url for server in cluster.replicas)
    with anyio.fail_after(TEST_DEADLINE):
        async with httpx2.AsyncClient(timeout=READ_TIMEOUT) as http:
            session = await raw_session(http, first)
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(second, json=note, headers=session)).status_code == 202
            listed = await http.post(second, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=session)
            assert listed.status_code == 200 and "echo" in listed.text, listed.text
            stream_headers = {**session, "Accept": "text/event-stream"}
            async with http.stream("GET", third, headers=stream_headers) as stream:
                assert stream.status_code == 200
                ended = await http.delete(second, headers=session)
                assert ended.status_code == 200, ended.text
                with anyio.fail_after(5):
                    async for _ in stream.aiter_lines():
                        pass  # the stream ends when the session does
            gone = await http.post(first, json={"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers=session)
            assert gone.status_code == 404, gone.text


async def test_a_replica_killed_under_load(cluster: Cluster) -> None:
    """SIGKILL of one replica while 2026 calls stream through nginx: only the calls it was
    running fail; the next ones go to the others. A handshake-era session it made carries
    on through the others."""
    victim = cluster.replicas[1]
    outcomes: list[tuple[float, bool]] = []
    killed_at = 0.0

    async def load() -> None:
        async with raw_modern(cluster.url) as raw:
            while not killed_at or time.monotonic() < killed_at + 2:
                _, body, headers = raw.request("tools/call", "echo", {"name": "echo", "arguments": {"text": "x"}})
                try:
                    response = await raw.http.post(raw.url, json=body, headers=headers)
                    ok = response.status_code == 200 and '"isError":false' in response.text.replace(" ", "")
                except httpx2.HTTPError:
                    ok = False
                outcomes.append((time.monotonic(), ok))

    with anyio.fail_after(TEST_DEADLINE):
        async with httpx2.AsyncClient(timeout=READ_TIMEOUT) as http:
            session = await raw_session(http, victim.url)
            await http.post(victim.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
            async with anyio.create_task_group() as group:
                for _ in range(8):
                    group.start_soon(load)
                await anyio.sleep(1)
                victim.process.kill()
                killed_at = time.monotonic()
            failed = [at for at, ok in outcomes if not ok]
            assert len(failed) <= 8, f"{len(failed)} of {len(outcomes)} calls failed"
            assert all(at < killed_at + 1 for at in failed), "calls failed well after the kill"
            assert sum(ok for at, ok in outcomes if at > killed_at + 1) > 0
            for _ in range(3):
                listed = await http.post(cluster.url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=session)
                assert listed.status_code == 200 and "echo" in listed.text, listed.text


async def test_a_handshake_session_while_redis_is_away(cluster: Cluster) -> None:
    """Without Redis, the replica holding a copy of a session serves it as it is; another
    replica answers 503 with the reason, never 404; once Redis is back (empty), the session
    is gone everywhere and a new one works."""
    made_on, other = cluster.replicas[0].url, cluster.replicas[1].url
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    with anyio.fail_after(TEST_DEADLINE):
        async with httpx2.AsyncClient(timeout=READ_TIMEOUT) as http:
            session = await raw_session(http, made_on)
            cluster.redis.stop()
            assert (await http.post(made_on, json=listing, headers=session)).status_code == 200
            away = await http.post(other, json=listing, headers=session)
            assert away.status_code == 503 and "shared store is unavailable" in away.text, away.text
            cluster.redis.start()
            deadline = time.monotonic() + 15
            while (gone := await http.post(other, json=listing, headers=session)).status_code == 503:
                assert time.monotonic() < deadline, gone.text
                await anyio.sleep(0.5)
            assert gone.status_code == 404, gone.text
            again = await http.post(other, json=INITIALIZE, headers=ACCEPT)
            assert again.status_code == 200 and "mcp-session-id" in again.headers


def sse_events(text: str) -> list[dict]:
    """The events of an SSE body: each with its id, retry and data (JSON, or "" when none)."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) if ": " in line else (line.rstrip(":"), "") for line in block.splitlines() if not line.startswith(":"))
        if fields:
            data = fields.get("data", "")
            events.append({"id": fields.get("id"), "retry": fields.get("retry"), "data": json.loads(data) if data else ""})
    return events


async def test_a_dropped_stream_resumed_on_another_replica(cluster: Cluster) -> None:
    """Raw: a POST's stream on one replica is dropped mid-call and picked up on a second with
    Last-Event-ID (every progress step once, then the answer); the GET stream, dropped on the
    third, is picked up on the first with what came while it was closed."""
    first, second, third = (server.url for server in cluster.replicas)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "slow", "arguments": {"steps": 40}, "_meta": {"progressToken": "t"}}}  # fmt: skip
    with anyio.fail_after(TEST_DEADLINE):
        async with httpx2.AsyncClient(timeout=READ_TIMEOUT) as http:
            session = await raw_session(http, first)
            await http.post(first, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
            before: list[dict] = []
            async with http.stream("POST", first, json=call, headers=session) as stream:
                text = ""
                async for chunk in stream.aiter_text():
                    text += chunk
                    before = sse_events(text.rsplit("\n\n", 1)[0] + "\n\n")
                    if sum(1 for e in before if e["data"] and e["data"].get("method") == "notifications/progress") >= 3:
                        break
            assert before[0]["data"] == "" and before[0]["retry"] == "1000", before[0]
            resume = {**session, "Accept": "text/event-stream", "Last-Event-ID": before[-1]["id"]}
            resumed = await http.get(second, headers=resume)
            assert resumed.status_code == 200, resumed.text
            after = sse_events(resumed.text)
            progress = [e["data"]["params"]["progress"] for e in before + after if e["data"] and e["data"].get("method") == "notifications/progress"]
            assert progress == list(range(1, 41)), progress
            assert after[-1]["data"]["result"]["structuredContent"] == {"done": 40}
            stream_id = before[-1]["id"].split(".")[0]
            assert all(e["id"].split(".")[0] == stream_id for e in after), after

            subscribe = {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": "test://info"}}
            assert (await http.post(second, json=subscribe, headers=session)).status_code == 200
            touch = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "touch", "arguments": {}}}
            get = {**session, "Accept": "text/event-stream"}
            seen: list[dict] = []
            async with http.stream("GET", third, headers=get) as stream:
                assert (await http.post(first, json=touch, headers=session)).status_code == 200
                text = ""
                async for chunk in stream.aiter_text():
                    text += chunk
                    seen = [e for e in sse_events(text.rsplit("\n\n", 1)[0] + "\n\n") if e["data"]]
                    if seen:
                        break
            assert seen[0]["id"].startswith("g."), seen
            # Changes raised while no GET stream is open wait for the next one.
            assert (await http.post(second, json={**touch, "id": 5}, headers=session)).status_code == 200
            await anyio.sleep(0.5)
            methods: list[str] = []
            async with http.stream("GET", first, headers={**get, "Last-Event-ID": seen[0]["id"]}) as stream:
                text = ""
                with anyio.move_on_after(SETTLE * 2):  # then nothing more: no event twice
                    async for chunk in stream.aiter_text():
                        text += chunk
                        methods = [e["data"]["method"] for e in sse_events(text.rsplit("\n\n", 1)[0] + "\n\n") if e["data"]]
            each_touch = ["notifications/resources/updated", "notifications/tools/list_changed"]
            rest_of_first = [m for m in each_touch if m != seen[0]["data"]["method"]]
            assert sorted(methods) == sorted(rest_of_first + each_touch), (seen, methods)


async def test_the_sdk_picks_up_streams_duet_ends(cluster_factory) -> None:
    """With --sse-close-after, duet ends a long call's stream before its answer; the official
    client picks it up with a GET through nginx (so mostly on another replica) and gets
    every progress step once, and the answer."""
    cluster = cluster_factory("http", "testkit", "--sse-close-after", "0.3")
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    with anyio.fail_after(TEST_DEADLINE):
        async with Client(cluster.url, mode="legacy", read_timeout_seconds=READ_TIMEOUT) as client:
            for _ in range(3):
                progress.clear()
                done = await client.call_tool("slow", {"steps": 40}, progress_callback=on_progress)
                assert done.structured_content == {"done": 40}
                assert progress == list(range(1, 41)), progress


async def test_nginx_replaces_what_clients_forward(cluster_factory) -> None:
    """Behind nginx as docs/deployment.md configures it, the replicas trusting it
    (--trusted-proxy): a client's own X-Forwarded-Host or Forwarded never reaches duet
    (nginx replaces the one and drops the other), so duet checks the host the client really
    used, and a forged name is neither refused as a foreign Host nor believed."""
    cluster = cluster_factory("http", "testkit", "--trusted-proxy", "127.0.0.1")
    with anyio.fail_after(TEST_DEADLINE):
        async with httpx2.AsyncClient(timeout=READ_TIMEOUT) as http:
            for forged in (
                {"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"},
                {"Forwarded": "for=192.0.2.1;host=evil.example;proto=https"},
            ):
                made = await http.post(cluster.url, json=INITIALIZE, headers={**ACCEPT, **forged})
                assert made.status_code == 200, (forged, made.text)
            # Sent straight to a replica (from 127.0.0.1, which it trusts too), the header is
            # believed and the name refused: nginx is what made the difference.
            forged = {**ACCEPT, "X-Forwarded-Host": "evil.example"}
            direct = await http.post(cluster.replicas[0].url, json=INITIALIZE, headers=forged)
            assert direct.status_code == 421, direct.text


async def test_the_session_caps_count_across_replicas(cluster_factory) -> None:
    """--max-sessions-per-principal 2 over three replicas: a third session of one token's,
    made on a third replica, ends the least recently used one, made on the first, on every
    replica. (Without authentication every client is one principal, and only
    --max-sessions caps its sessions.)"""
    cluster = cluster_factory("http", "testkit", "--max-sessions-per-principal", "2", "--auth-token", "tok-caps")
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    with anyio.fail_after(TEST_DEADLINE):
        async with httpx2.AsyncClient(timeout=READ_TIMEOUT, headers={"Authorization": "Bearer tok-caps"}) as http:
            sessions = []
            for server in cluster.replicas:
                sessions.append(await raw_session(http, server.url))
                await anyio.sleep(0.05)
            oldest, *kept = sessions
            for server in cluster.replicas:
                gone = await http.post(server.url, json=listing, headers=oldest)
                assert gone.status_code == 404, gone.text
                for session in kept:
                    listed = await http.post(server.url, json=listing, headers=session)
                    assert listed.status_code == 200 and "echo" in listed.text, listed.text
