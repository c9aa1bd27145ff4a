"""The official Python SDK client (`mcp` 2.3.0) against duet behind oidc-provider, with its
non-interactive client-credentials OAuth provider: the discovery a real client makes
(401 -> Protected Resource Metadata -> authorization server metadata -> token with the
`resource` parameter -> retry), then a tool call, then a scope step-up (403
insufficient_scope -> a new token with the union of scopes -> retry).

    python python_client.py MCP_URL ISSUER

Prints one JSON document: per connection mode, what the client saw and every HTTP request
it made (method, URL, status, and the token requests' form fields). Exits non-zero on any
failure. The Rust test `oauth_python` runs it and checks the result.
"""

from __future__ import annotations

import json
import sys
from urllib.parse import parse_qs

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

DEADLINE = 60.0


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def run(url: str, issuer: str, mode: str) -> dict:
    log: list[dict] = []

    async def on_response(response: httpx2.Response) -> None:
        request = response.request
        entry = {"method": request.method, "url": str(request.url), "status": response.status_code}
        if request.url.path.endswith("/token"):
            form = parse_qs(request.content.decode())
            entry["form"] = {k: v[0] for k, v in form.items()}
        log.append(entry)

    auth = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=MemoryStorage(),
        client_id="duet-test",
        client_secret="duet-test-secret",
        issuer=issuer,
    )
    http = create_mcp_http_client(auth=auth)
    http.event_hooks["response"].append(on_response)
    seen: dict = {"mode": mode}
    async with http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=20) as client:
            tools = await client.list_tools()
            seen["tools"] = sorted(t.name for t in tools.tools)
            echo = await client.call_tool("echo", {"text": f"hello over {mode}"})
            seen["echo"] = echo.structured_content
            linked = await client.call_tool("linked", {})
            seen["linked"] = [c.model_dump(mode="json", exclude_none=True) for c in linked.content]
            seen["linked_error"] = linked.is_error
            tools = await client.list_tools()
            seen["tools_after_step_up"] = sorted(t.name for t in tools.tools)
    seen["requests"] = log
    return seen


async def main() -> None:
    url, issuer = sys.argv[1], sys.argv[2]
    results = []
    with anyio.fail_after(DEADLINE):
        for mode in ("auto", "legacy"):
            results.append(await run(url, issuer, mode))
    print(json.dumps(results))


if __name__ == "__main__":
    anyio.run(main)
