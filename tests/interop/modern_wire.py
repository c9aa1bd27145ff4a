"""The 2026-07-28 wire by hand: requests with their headers and `_meta` envelope, and the
refund fixture's multi round trip (ask, confirm, replay). The SDK never alters or replays a
`requestState`, so the tamper, replay and replica checks need a hand-made client.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
from conftest import MODERN

READ_TIMEOUT = 10.0
"""The client's per-request read timeout, in seconds."""

ORDER = "A-1042"
BIG_REFUND = {"order_id": ORDER, "amount_cents": 25_000}
"""Above 100 USD: refund_order asks `confirm` (an elicitation form {ok: boolean}) first."""


def modern_meta(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-interop", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }


def messages_of(response: httpx2.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a POST's answer: a JSON body or an SSE stream."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        return [response.json()]
    assert kind.startswith("text/event-stream"), (response.status_code, kind, response.text)
    data = [line[len("data:") :].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return [json.loads(d) for d in data if d]


@dataclass
class RawModern:
    """Sends 2026-07-28 requests by hand: headers, `_meta` envelope, fresh ids."""

    http: httpx2.AsyncClient
    url: str
    capabilities: dict[str, Any]
    next_id: int = 1

    def request(self, method: str, name: str, params: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """A fresh id, the request's body and its headers."""
        request_id, self.next_id = self.next_id, self.next_id + 1
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": method,
            "params": {**params, "_meta": modern_meta(self.capabilities)},
        }
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": method,
            "Mcp-Name": name,
        }
        return request_id, body, headers

    async def call(self, method: str, name: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id, body, headers = self.request(method, name, params)
        response = await self.http.post(self.url, json=body, headers=headers)
        assert response.status_code == 200, (response.status_code, response.text)
        answers = [m for m in messages_of(response) if m.get("id") == request_id]
        assert len(answers) == 1, response.text
        return answers[0]

    @asynccontextmanager
    async def stream(self, method: str, name: str, params: dict[str, Any]) -> AsyncIterator[AsyncIterator[dict]]:
        """A request whose answer is an SSE stream (`subscriptions/listen`): its messages as
        they arrive, until the caller leaves (which closes the stream)."""
        _, body, headers = self.request(method, name, params)
        async with self.http.stream("POST", self.url, json=body, headers=headers) as response:
            assert response.status_code == 200, response.status_code
            assert response.headers["content-type"].startswith("text/event-stream")
            yield sse_messages(response)

    async def tool(self, name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return await self.call("tools/call", name, {"name": name, "arguments": arguments, **extra})


@asynccontextmanager
async def raw_modern(url: str, capabilities: dict[str, Any] | None = None) -> AsyncIterator[RawModern]:
    """A raw 2026-07-28 client of the endpoint `url`, declaring elicitation by default."""
    caps = {"elicitation": {}} if capabilities is None else capabilities
    async with httpx2.AsyncClient(timeout=READ_TIMEOUT) as http:
        yield RawModern(http, url, caps)


CONFIRMED = {"confirm": {"action": "accept", "content": {"ok": True}}}


def tampered(state: str) -> str:
    """`state` with one character in the middle changed (still URL-safe base64)."""
    i = len(state) // 2
    return state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1 :]


async def ask_refund(raw: RawModern, arguments: dict[str, Any] = BIG_REFUND) -> str:
    """Sends the refund, checks the input_required answer and returns its requestState."""
    first = await raw.tool("refund_order", arguments)
    assert "error" not in first, first
    result = first["result"]
    assert result["resultType"] == "input_required", result
    assert set(result["inputRequests"]) == {"confirm"}, result
    confirm = result["inputRequests"]["confirm"]
    assert confirm["method"] == "elicitation/create"
    assert "250.00" in confirm["params"]["message"]
    assert confirm["params"]["requestedSchema"]["properties"]["ok"] == {"type": "boolean"}
    state = result["requestState"]
    assert isinstance(state, str) and state
    return state


def refunded(answer: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in answer, answer
    result = answer["result"]
    assert result.get("resultType", "complete") == "complete", result
    assert result["isError"] is False, result
    return result["structuredContent"]


async def sse_messages(response: httpx2.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON messages of an SSE response, as they arrive (past a 2025-11-25 stream's
    priming event, which has an id and no data)."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            data.append(line[len("data:") :].strip())
        elif line == "" and data:
            if any(data):
                yield json.loads("\n".join(data))
            data = []
