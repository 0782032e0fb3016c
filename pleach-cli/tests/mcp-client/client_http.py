# The real-client MCP test over Streamable HTTP, Python side: the official Python SDK against
# `pleach mcp --http` (started here on a free loopback port, with a token file) in both of the
# SDK's modes: "auto" (`server/discover`, then MCP 2026-07-28, stateless) and "legacy" (the
# `initialize` handshake, then an MCP session). Usage: python client_http.py PATH/TO/pleach (with `mcp` installed:
# .ci/run installs it into a temporary venv). Exits 1 on any failure.
import asyncio
import re
import secrets
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from client import FAILING, GOOD, call_badly, call_every_tool, call_fifty_at_once, check


class HttpServer:
    """`pleach mcp --http 127.0.0.1:0 …`; its URL read from the line it prints once listening."""

    def __init__(self, binary, folder, token):
        self.root = Path(folder, "root")
        (self.root / "emptydir").mkdir(parents=True, exist_ok=True)
        tokens = Path(folder, "tokens")
        tokens.write_text(f"{token}\n")
        args = ["mcp", "--http", "127.0.0.1:0", "--token-file", str(tokens), "--root", str(self.root)]
        args += ["--allow-program", "echo", "--allow-program", "sh"]
        self.process = subprocess.Popen([binary, *args], stderr=subprocess.PIPE, text=True)
        self.log = []
        found = threading.Event()

        def read():
            for line in self.process.stderr:
                self.log.append(line)
                match = re.search(r"listening on (http://\S+)", line)
                if match:
                    self.url = match.group(1)
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        check(found.wait(20), f"no URL within 20 s: {''.join(self.log)}")

    def stop(self):
        self.process.terminate()
        code = self.process.wait(timeout=40)
        check(code == 0, f"exit code {code} after SIGTERM: {''.join(self.log)}")


def connect(server, mode, token):
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    transport = streamable_http_client(server.url, http_client=create_mcp_http_client(headers=headers))
    return Client(transport, mode=mode)


async def session(server, mode, token):
    try:
        async with connect(server, mode, None) as client:
            await client.list_tools()
        raise AssertionError("a client without the token was let in")
    except AssertionError:
        raise
    except Exception as error:  # noqa: BLE001 - the SDK's error for a 401 differs by mode
        check("401" in repr(error) or "Unauthorized" in repr(error) or "Bearer" in repr(error), repr(error))

    async with connect(server, mode, token) as client:
        expected_version = "2026-07-28" if mode == "auto" else "2025-11-25"
        check(client.protocol_version == expected_version, client.protocol_version)
        check(client.server_info is not None and client.server_info.name == "pleach", client.server_info)
        tools = (await client.list_tools()).tools
        names = {tool.name for tool in tools}
        check(names == set(GOOD) | set(FAILING), f"listed: {sorted(names)}")

        # Every tool called as on stdio. The scratchpad's calls are single requests here: see below.
        await call_every_tool(client, skip={"scratchpad"})
        await call_badly(client)

        # Auto mode is stateless: each request has a session of its own, so a note set by one call
        # is not there for the next. Legacy mode starts with `initialize`, so the client has an MCP
        # session held by the server, and the note lasts (docs/mcp.md, "Sessions").
        result = await client.call_tool("scratchpad", {"operation": "set", "key": "plan", "value": "x"})
        check(not result.is_error, result)
        listed = await client.call_tool("scratchpad", {"operation": "list"})
        kept = "plan" in str(listed.structured_content)
        check(not listed.is_error and kept == (mode == "legacy"), (mode, listed))

        await call_fifty_at_once(client)


async def main(binary):
    with tempfile.TemporaryDirectory() as folder:
        token = secrets.token_urlsafe(24)
        server = HttpServer(binary, folder, token)
        try:
            for mode in ("auto", "legacy"):
                await session(server, mode, token)
        finally:
            server.stop()
    print("ok (HTTP): the Python SDK in auto (2026-07-28) and legacy modes; token required; SIGTERM exit 0")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python client_http.py PATH/TO/pleach", file=sys.stderr)
        sys.exit(2)
    try:
        asyncio.run(main(sys.argv[1]))
    except BaseException:  # noqa: BLE001 - report whatever failed, then exit 1
        traceback.print_exc()
        print("FAILED", file=sys.stderr)
        sys.exit(1)
