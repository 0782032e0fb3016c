# The real-client MCP test, Python side: the official Python SDK (`mcp` on PyPI) against
# `pleach mcp` on stdio, in both of the SDK's modes: "auto" (`server/discover`, then MCP
# 2026-07-28 with a `_meta` envelope on each request, the SDK's default) and "legacy" (the
# `initialize` handshake). Usage: python client.py PATH/TO/pleach (with `mcp` installed: .ci/run
# installs it into a temporary venv). Exits 1 on any failure.
import asyncio
import base64
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from jsonschema.validators import validator_for
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import PaginatedRequestParams

# Arguments every tool of the catalog succeeds with: the SDK checks each result's
# `structuredContent` against the tool's `outputSchema`. Empty and edge results included.
GOOD = {
    "datetime": [
        {"operation": "now"},
        {"operation": "difference", "datetime": "2024-03-09", "other": "2023-01-01"},
        {"operation": "format", "datetime": "2024-03-10", "format": "%A"},
    ],
    "fs_write": [{"path": "a/b.txt", "content": "hello\nworld\n"}, {"path": "empty.txt", "content": ""}],
    "fs_read": [{"path": "a/b.txt"}, {"path": "empty.txt"}, {"path": "a/b.txt", "offset": 3, "length": 2}],
    "fs_list": [{}, {"path": "a"}, {"path": "emptydir"}],
    "math": [{"expression": "6*7"}, {"expression": "10^20"}, {"expression": "-0"}],
    "parse_structured": [
        {"format": "json", "text": "null"},
        {"format": "json", "text": '{"a": [1, 18446744073709551615]}'},
        {"format": "yaml", "text": "a: [x, y]"},
        {"format": "toml", "text": "a = 1979-05-27T07:32:00Z"},
        {"format": "csv", "text": "a,b\n1,2\n"},
    ],
    "scratchpad": [
        {"operation": "list"},
        {"operation": "set", "key": "plan", "value": "ship it"},
        {"operation": "get", "key": "plan"},
        {"operation": "list"},
        {"operation": "delete", "key": "plan"},
    ],
    "shell_exec": [{"program": "echo", "args": ["hi"]}, {"program": "sh", "args": ["-c", "exit 3"]}],
    "text_search": [
        {"query": "world", "text": "hello\nworld"},
        {"query": "zzz", "text": "hello"},
        {"query": "wrld", "text": "hello\nworld", "mode": "fuzzy"},
    ],
    "unit_convert": [{"value": 5, "from": "km", "to": "mi"}],
}
# Tools that cannot succeed here (no network, no allowed host): a tool error all the same.
FAILING = {
    "http_request": {"method": "GET", "url": "https://example.com/"},
    "url_fetch": {"url": "http://127.0.0.1:9/"},
}


def check(condition, message):
    if not condition:
        raise AssertionError(message)


class Server:
    """`pleach mcp` under a `sh` that records its exit code and stderr."""

    def __init__(self, binary, folder, name):
        self.root = Path(folder, "root")
        (self.root / "emptydir").mkdir(parents=True, exist_ok=True)
        self.rc = Path(folder, f"{name}.rc")
        self.err = Path(folder, f"{name}.err")
        script = 'trap : TERM; "$0" "$@" 2>"$PLEACH_ERR"; echo $? >"$PLEACH_RC"'
        args = ["mcp", "--root", str(self.root), "--allow-program", "echo", "--allow-program", "sh"]
        self.params = StdioServerParameters(
            command="sh",
            args=["-c", script, binary, *args],
            env={"PLEACH_RC": str(self.rc), "PLEACH_ERR": str(self.err)},
        )

    def check_ended_cleanly(self):
        deadline = time.monotonic() + 5
        while not self.rc.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        check(self.rc.exists(), "the server was killed instead of exiting")
        check(self.rc.read_text().strip() == "0", f"exit code {self.rc.read_text().strip()}")
        errors = self.err.read_text()
        check(errors == "", f"stderr: {errors}")


async def call_every_tool(client, skip=()):
    """Every tool with good arguments (the SDK checks each `structuredContent` against its
    `outputSchema`), and the tools that cannot succeed here: a tool error all the same."""
    for name, calls in GOOD.items():
        if name in skip:
            continue
        for arguments in calls:
            result = await client.call_tool(name, arguments)
            check(not result.is_error, f"{name} {arguments}: {result.content}")
    for name, arguments in FAILING.items():
        result = await client.call_tool(name, arguments)
        check(result.is_error and result.content[0].text.startswith("error 1"), result)


async def call_badly(client):
    """Bad arguments and a missing one: tool errors (1001); an unknown tool: a protocol error."""
    for arguments in ({"expression": 42}, {}, {"expression": "1", "extra": 1}):
        result = await client.call_tool("math", arguments)
        check(result.is_error and result.content[0].text.startswith("error 1001:"), result)
    try:
        await client.call_tool("no_such_tool", {})
        raise AssertionError("an unknown tool is not a protocol error")
    except MCPError as error:
        check(error.error.code == -32602 and "unknown tool" in error.error.message, error)


async def call_fifty_at_once(client):
    """Fifty calls at once, each answered with its own result."""
    calls = [client.call_tool("math", {"expression": f"{i}*2"}) for i in range(50)]
    results = await asyncio.gather(*calls)
    check([r.structured_content["result"] for r in results] == [i * 2 for i in range(50)], results)


def alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def wait_for_pid(file):
    for _ in range(500):
        if file.exists() and file.read_text().strip():
            return int(file.read_text())
        await asyncio.sleep(0.02)
    raise AssertionError("the program never started")


async def wait_gone(pid):
    for _ in range(250):
        if not alive(pid):
            return
        await asyncio.sleep(0.02)
    os.kill(pid, 9)
    raise AssertionError(f"the call's program {pid} outlived its call")


async def session(server, mode):
    async with Client(server.params, mode=mode) as client:
        expected_version = "2026-07-28" if mode == "auto" else "2025-11-25"
        check(client.protocol_version == expected_version, client.protocol_version)
        check(client.server_info is not None and client.server_info.name == "pleach", client.server_info)
        check(client.server_capabilities.tools is not None, client.server_capabilities)
        if mode == "legacy":
            await client.session.send_ping()

        tools = (await client.list_tools()).tools
        names = {tool.name for tool in tools}
        check(names == set(GOOD) | set(FAILING), f"listed: {sorted(names)}")
        for tool in tools:
            for schema in (tool.input_schema, tool.output_schema):
                if schema is not None:
                    validator_for(schema).check_schema(schema)
        try:
            await client.session.list_tools(params=PaginatedRequestParams(cursor="bogus"))
            raise AssertionError("a cursor the server never gave is not invalid params")
        except MCPError as error:
            check(error.error.code == -32602, error)

        await call_every_tool(client)
        await call_badly(client)
        await call_fifty_at_once(client)

        # Cancellation: the SDK sends notifications/cancelled; the program is stopped, the
        # session goes on.
        pid_file = server.root / f"cancel-{mode}.pid"
        running = asyncio.create_task(
            client.call_tool("shell_exec", {"program": "sh", "args": ["-c", f"echo $$ >{pid_file.name}; exec sleep 60"]})
        )
        pid = await wait_for_pid(pid_file)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await wait_gone(pid)
        result = await client.call_tool("math", {"expression": "1+1"})
        check(result.structured_content == {"result": 2.0}, result)

        # An image read by fs_read reaches this client as an MCP image block (base64 data and
        # its MIME type, sniffed from the bytes), not as JSON text.
        png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x02\0\0\0\x01" + bytes(range(64))
        (server.root / f"shot-{mode}.bin").write_bytes(png)
        result = await client.call_tool("fs_read", {"path": f"shot-{mode}.bin"})
        images = [block for block in result.content if block.type == "image"]
        check(len(images) == 1, result)
        check(images[0].mime_type == "image/png", images[0])
        check(base64.b64decode(images[0].data) == png, "the image's bytes changed on the way")


async def shutdown_mid_call(server):
    """MCP's stdio shutdown with a call still running: the SDK closes stdin, waits, SIGTERMs."""
    pid_file = server.root / "shutdown.pid"
    async with Client(server.params, mode="legacy") as client:
        running = asyncio.create_task(
            client.call_tool("shell_exec", {"program": "sh", "args": ["-c", f"echo $$ >{pid_file.name}; exec sleep 60"]})
        )
        pid = await wait_for_pid(pid_file)
    await asyncio.gather(running, return_exceptions=True)
    await wait_gone(pid)


async def main(binary):
    with tempfile.TemporaryDirectory() as folder:
        for mode in ("auto", "legacy"):
            server = Server(binary, folder, mode)
            await session(server, mode)
            server.check_ended_cleanly()
        server = Server(binary, folder, "shutdown")
        await shutdown_mid_call(server)
        server.check_ended_cleanly()
    print("ok: the Python SDK in auto (2026-07-28) and legacy modes; every tool called; shutdown clean")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python client.py PATH/TO/pleach", file=sys.stderr)
        sys.exit(2)
    try:
        asyncio.run(main(sys.argv[1]))
    except BaseException:  # noqa: BLE001 - report whatever failed, then exit 1
        traceback.print_exc()
        print("FAILED", file=sys.stderr)
        sys.exit(1)
