# The real-client approval test: the official Python SDK (`mcp` on PyPI) against a user's own MCP
# server (`examples/mcp_server.rs`: an expense assistant whose standard-tier `delete_expense` asks
# the user before every call) on stdio, in both of the SDK's modes ("auto": `server/discover`, then
# MCP 2026-07-28; "legacy": `initialize`). A client without an elicitation callback cannot ask its
# user, so the flagged call must answer at once with an `isError` result saying approval is
# required (1012), and never run. A client with one is asked: in legacy mode by an
# `elicitation/create` request, in auto mode (2026-07-28, no requests from server to client) by an
# input-required result the SDK answers and retries with; approve, edit and reject each decide.
# Usage: python approval.py PATH/TO/mcp_server. Exits 1 on any failure.
import asyncio
import json
import re
import subprocess
import sys
import time
import traceback

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import ElicitResult

# Far below the SDK's own request timeout: a call that waits for a decision fails this bound.
ANSWER_WITHIN_S = 5.0


def check(condition, message):
    if not condition:
        raise AssertionError(message)


async def session(target, mode):
    async with Client(target, mode=mode) as client:
        check(client.server_info is not None and client.server_info.name == "expenses", client.server_info)
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        check({"add_expense", "list_expenses", "delete_expense"} <= set(tools), sorted(tools))
        check(tools["delete_expense"].annotations.destructive_hint is True, tools["delete_expense"].annotations)

        added = await client.call_tool("add_expense", {"description": "train", "cents": 4200, "category": "travel"})
        check(not added.is_error, added.content)
        expense_id = added.structured_content["id"]

        started = time.monotonic()
        deleted = await asyncio.wait_for(
            client.call_tool("delete_expense", {"id": expense_id}), timeout=ANSWER_WITHIN_S
        )
        elapsed = time.monotonic() - started
        check(deleted.is_error, f"the flagged call ran: {deleted.content}")
        text = deleted.content[0].text
        check(text.startswith("error 1012:"), text)
        check("needs the user's approval" in text, text)
        check(elapsed < ANSWER_WITHIN_S, f"answered after {elapsed:.1f} s")

        # It never ran: the expense is still there, and the server goes on serving.
        listed = await client.call_tool("list_expenses", {"category": "travel"})
        check(not listed.is_error, listed.content)
        # A list is not an object, so it comes back as JSON text only (MCP's structuredContent is an object).
        check([e["id"] for e in json.loads(listed.content[0].text)] == [expense_id], listed.content)

        # A wrong enum value is a tool error the model can fix (1001), not a protocol error.
        bad = await client.call_tool("add_expense", {"description": "x", "cents": 1, "category": "snacks"})
        check(bad.is_error and bad.content[0].text.startswith("error 1001:"), bad.content)


async def elicited(target, mode, category="food"):
    answers = []
    asked = []

    async def answer(context, params):
        asked.append(params)
        return answers.pop(0)

    async with Client(target, mode=mode, elicitation_callback=answer) as client:
        ids = []
        for description in ("a", "b", "c"):
            added = await client.call_tool("add_expense", {"description": description, "cents": 1, "category": category})
            check(not added.is_error, added.content)
            ids.append(added.structured_content["id"])

        async def listed():
            result = await client.call_tool("list_expenses", {"category": category})
            return [e["id"] for e in json.loads(result.content[0].text)]

        answers.append(ElicitResult(action="accept", content={"approve": True}))
        approved = await client.call_tool("delete_expense", {"id": ids[0]})
        check(not approved.is_error, approved.content)
        check(len(asked) == 1 and "delete_expense" in asked[0].message, asked)
        check(await listed() == ids[1:], await listed())

        answers.append(ElicitResult(action="accept", content={"approve": True, "arguments": json.dumps({"id": ids[2]})}))
        edited = await client.call_tool("delete_expense", {"id": ids[1]})
        check(not edited.is_error, edited.content)
        check(await listed() == [ids[1]], await listed())

        answers.append(ElicitResult(action="accept", content={"approve": False, "reason": "keep it"}))
        rejected = await client.call_tool("delete_expense", {"id": ids[1]})
        check(rejected.is_error and rejected.content[0].text.startswith("error 1013:"), rejected.content)
        check("keep it" in rejected.content[0].text, rejected.content)
        answers.append(ElicitResult(action="decline"))
        declined = await client.call_tool("delete_expense", {"id": ids[1]})
        check(declined.is_error and declined.content[0].text.startswith("error 1013:"), declined.content)
        check(await listed() == [ids[1]], await listed())
        check(len(asked) == 4, asked)


class HttpServer:
    """`mcp_server --http 127.0.0.1:0`; its URL read from the line it prints once listening."""

    def __init__(self, binary):
        self.process = subprocess.Popen([binary, "--http", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
        line = self.process.stderr.readline()
        match = re.search(r"at (http://\S+)", line)
        check(match is not None, f"no URL: {line}")
        self.url = match.group(1)

    def stop(self):
        self.process.terminate()
        check(self.process.wait(timeout=40) == 0, "exit code after SIGTERM")


async def main(binary):
    stdio = StdioServerParameters(command=binary, args=[])
    for mode in ("auto", "legacy"):
        await session(stdio, mode)
        await elicited(stdio, mode)
    http = HttpServer(binary)
    try:
        await session(http.url, "auto")
        await elicited(http.url, "auto")
        # Initialize-first over HTTP: the client has an MCP session, so the server's
        # `elicitation/create` reaches it (the ledger is the server's: another category).
        await elicited(http.url, "legacy", category="lodging")
    finally:
        http.stop()
    print(
        "ok: the Python SDK in auto (input required, 2026-07-28) and legacy (elicitation request) modes "
        "on stdio and over HTTP: approve, edit, reject and decline decide; without a callback, 1012 "
        "at once"
    )


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1]))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
