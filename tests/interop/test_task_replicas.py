"""Tasks across three duet replicas sharing Redis (see cluster.py), over the 2026-07-28 wire
by hand (the tasks extension, SEP-2663): a task started on one replica is read, answered and
cancelled on the others, and followed by a listen stream on another; a cancel through
another replica stops the work on the replica running it; a task outlives the death of a
replica that was not running it; and a task whose replica dies fails once its lease expires,
so a client polling it is not left waiting.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from cluster import Cluster, cluster_factory  # noqa: F401 - the fixture
from modern_wire import RawModern, raw_modern

pytestmark = pytest.mark.anyio

TEST_DEADLINE = 60.0
"""Seconds any one test body may take."""

TASKS = "io.modelcontextprotocol/tasks"
DECLARING = {"elicitation": {}, "extensions": {TASKS: {}}}
"""A client that takes tasks and answers elicitations."""

LEASE = 2
"""Seconds of a replica's claim on a task it runs, in the replica-death test."""


def result_of(answer: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in answer, answer
    return answer["result"]


async def start(raw: RawModern, tool: str, arguments: dict[str, Any]) -> str:
    """Calls `tool`, which must become a task; its id."""
    created = result_of(await raw.tool(tool, arguments))
    assert created["resultType"] == "task", created
    return created["taskId"]


async def task(raw: RawModern, task_id: str, method: str = "tasks/get", **params: Any) -> dict[str, Any]:
    """A task method, named (Mcp-Name) by the task's id as the extension says."""
    return result_of(await raw.call(method, task_id, {"taskId": task_id, **params}))


async def until(raw: RawModern, task_id: str, *statuses: str) -> dict[str, Any]:
    """Polls the task until its status is one of `statuses`."""
    while True:
        got = await task(raw, task_id)
        if got["status"] in statuses:
            return got
        await anyio.sleep(0.1)


async def test_a_task_is_read_answered_and_cancelled_on_any_replica(cluster_factory) -> None:
    cluster: Cluster = cluster_factory("http", "conformance")
    first, second, third = (server.url for server in cluster.replicas)
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(first, DECLARING) as on_first, raw_modern(second, DECLARING) as on_second:
            async with raw_modern(third, DECLARING) as on_third:
                # Started on the first replica, which runs it; it asks on the second, is
                # answered on the third, and ends as the first finishes it.
                task_id = await start(on_first, "confirm_delete", {"filename": "notes.txt"})
                asking = await until(on_second, task_id, "input_required")
                [key] = asking["inputRequests"]
                assert asking["inputRequests"][key]["method"] == "elicitation/create"
                answer = {key: {"action": "accept", "content": {"confirm": True}}}
                ack = await task(on_third, task_id, "tasks/update", inputResponses=answer)
                assert ack["resultType"] == "complete" and "status" not in ack, ack
                done = await until(on_second, task_id, "completed", "failed", "cancelled")
                assert done["status"] == "completed", done
                assert done["result"]["content"][0]["text"] == "Deleted notes.txt", done

                # Cancelled through the second replica: the work stops on the first.
                long_id = await start(on_first, "slow_compute", {"seconds": 60, "label": "replicas"})
                assert (await task(on_second, long_id, "tasks/cancel"))["resultType"] == "complete"
                assert (await task(on_third, long_id))["status"] == "cancelled"
                stopped = f"task {long_id} ended elsewhere (cancelled), its handler stopped"
                while not any(stopped in line for line in cluster.replicas[0].stderr_lines):
                    await anyio.sleep(0.05)
                assert not any(stopped in line for server in cluster.replicas[1:] for line in server.stderr_lines)


async def test_a_listen_stream_on_one_replica_follows_a_task_running_on_another(cluster_factory) -> None:
    cluster: Cluster = cluster_factory("http", "conformance")
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(cluster.replicas[0].url, DECLARING) as runner:
            async with raw_modern(cluster.replicas[1].url, DECLARING) as listener:
                task_id = await start(runner, "slow_compute", {"seconds": 1, "label": "followed"})
                notifications = {"notifications": {"taskIds": [task_id]}}
                seen: list[dict[str, Any]] = []
                async with listener.stream("subscriptions/listen", "", notifications) as messages:
                    async for message in messages:
                        seen.append(message)
                        if message.get("method") == "notifications/tasks" and message["params"]["status"] == "completed":
                            break
                ack, current = seen[0], seen[1]
                assert ack["method"] == "notifications/subscriptions/acknowledged", seen
                assert ack["params"]["notifications"] == {"taskIds": [task_id]}, ack
                assert current["method"] == "notifications/tasks" and current["params"]["status"] == "working", seen
                done = seen[-1]["params"]
                assert done["taskId"] == task_id and done["result"]["content"][0]["text"] == "followed: done after 1 s"


async def test_a_task_outlives_a_replica_that_was_not_running_it(cluster_factory) -> None:
    cluster: Cluster = cluster_factory("http", "conformance")
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(cluster.replicas[0].url, DECLARING) as on_first:
            async with raw_modern(cluster.replicas[2].url, DECLARING) as on_third:
                task_id = await start(on_first, "slow_compute", {"seconds": 1.5, "label": "survivor"})
                cluster.replicas[1].process.kill()
                cluster.replicas[1].process.wait()
                done = await until(on_third, task_id, "completed", "failed", "cancelled")
                assert done["status"] == "completed", done


async def test_a_task_whose_replica_died_fails_once_its_lease_expires(cluster_factory) -> None:
    cluster: Cluster = cluster_factory("http", "conformance", "--task-lease", str(LEASE))
    victim = cluster.replicas[0]
    with anyio.fail_after(TEST_DEADLINE):
        async with raw_modern(victim.url, DECLARING) as on_victim:
            async with raw_modern(cluster.url, DECLARING) as through_nginx:
                task_id = await start(on_victim, "slow_compute", {"seconds": 60, "label": "orphan"})
                assert (await task(through_nginx, task_id))["status"] == "working"
                victim.process.kill()
                victim.process.wait()
                died = time.monotonic()
                failed = await until(through_nginx, task_id, "failed", "completed", "cancelled")
                waited = time.monotonic() - died
                assert failed["status"] == "failed", failed
                assert "stopped before the task finished" in failed["error"]["message"], failed
                assert failed["error"]["code"] == -32603, failed
                # Not before the lease could have expired, and not long after.
                assert waited < LEASE + 10, f"the task failed {waited:.1f} s after its replica died"
