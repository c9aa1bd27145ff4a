"""The benchmark's caller on the official Python SDK's client (PyPI `mcp` 2.3.0, the virtual
environment of scripts/python-venv.sh): `echo` over Streamable HTTP in either era, driven by
the harness as the Rust callers are (bench/clients/src/lib.rs says how):

    python python_client_echo.py URL 2026|handshake IN_FLIGHT

prints `ready VERSION` once connected and checked, answers each `run SECONDS` on stdin with
`done CALLS ERRORS`, and closes the connection at the end of stdin. Written as the SDK's
documentation does it: `mcp.Client(url, mode=...)` and `call_tool`.
"""

from __future__ import annotations

import sys
import time

import anyio
from mcp import Client

TEXT = "hi"
MODES = {"2026": "auto", "handshake": "legacy"}
EXPECTED = {"2026": "2026-07-28", "handshake": "2025-11-25"}


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main(url: str, era: str, in_flight: int) -> None:
    async with Client(url, mode=MODES[era]) as client:
        if client.protocol_version != EXPECTED[era]:
            raise SystemExit(f"agreed on {client.protocol_version}, not {EXPECTED[era]}")
        first = await client.call_tool("echo", {"text": TEXT})
        if first.is_error or first.structured_content != {"text": TEXT}:
            raise SystemExit(f"echo answered {first!r}")
        say(f"ready {client.protocol_version}")
        while command := await anyio.to_thread.run_sync(sys.stdin.readline):
            seconds = float(command.removeprefix("run "))
            deadline = time.monotonic() + seconds
            calls = errors = 0

            async def caller() -> None:
                nonlocal calls, errors
                while time.monotonic() < deadline:
                    calls += 1
                    try:
                        errors += (await client.call_tool("echo", {"text": TEXT})).is_error
                    except Exception:  # noqa: BLE001 - any failed call is counted, not fatal
                        errors += 1

            async with anyio.create_task_group() as callers:
                for _ in range(in_flight):
                    callers.start_soon(caller)
            say(f"done {calls} {errors}")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[2] not in MODES:
        raise SystemExit("usage: python_client_echo.py URL 2026|handshake IN_FLIGHT")
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
