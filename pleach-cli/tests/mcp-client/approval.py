# The real-client approval test: the official Python SDK (`mcp` on PyPI) against a user's own MCP
# server (`examples/mcp_server.rs`: an expense assistant whose standard-tier `delete_expense` asks
# the user before every call) on stdio, in both of the SDK's modes ("auto": `server/discover`, then
# MCP 2026-07-28; "legacy": `initialize`). A stdio client cannot approve a call, so the flagged call
# must answer at once with an `isError` result saying approval is required (1012), and never run.
# Usage: python approval.py PATH/TO/mcp_server. Exits 1 on any failure.
import asyncio
import json
import sys
import time
import traceback

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

# Far below the SDK's own request timeout: a call that waits for a decision fails this bound.
ANSWER_WITHIN_S = 5.0


def check(condition, message):
    if not condition:
        raise AssertionError(message)


async def session(binary, mode):
    params = StdioServerParameters(command=binary, args=[])
    async with Client(params, mode=mode) as client:
        check(client.server_info is not None and client.server_info.name == "expenses", client.server_info)
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        check(set(tools) == {"add_expense", "list_expenses", "delete_expense"}, sorted(tools))
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


async def main(binary):
    for mode in ("auto", "legacy"):
        await session(binary, mode)
    print("ok: the Python SDK in auto and legacy modes; a call that needs approval answers 1012 at once")


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1]))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
