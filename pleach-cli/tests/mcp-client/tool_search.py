# The official Python SDK (`mcp` on PyPI) against `pleach mcp --tool-search --always math` on
# stdio, in both of the SDK's modes ("auto": MCP 2026-07-28; "legacy": `initialize`): tools/list
# gives the search tool, the call-by-name tool and `math` only; a search finds `unit_convert`
# with its input schema; `call_tool` runs it, and a bad call's tool error comes back as from
# tools/call. Usage: python tool_search.py PATH/TO/pleach (with `mcp` installed, as for
# client.py). Exits 1 on any failure.
import asyncio
import sys
import traceback

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters


def check(condition, message):
    if not condition:
        raise AssertionError(message)


async def session(binary, mode):
    params = StdioServerParameters(command=binary, args=["mcp", "--tool-search", "--always", "math"])
    async with Client(params, mode=mode) as client:
        tools = (await client.list_tools()).tools
        names = [tool.name for tool in tools]
        check(names == ["search_tools", "call_tool", "math"], names)
        check(tools[0].input_schema["required"] == ["query"], tools[0].input_schema)

        found = await client.call_tool("search_tools", {"query": "convert kilometers to miles"})
        check(not found.is_error, found)
        first = found.structured_content["tools"][0]
        check(first["name"] == "unit_convert", found.structured_content)
        check(sorted(first["inputSchema"]["required"]) == ["from", "to", "value"], first)

        arguments = {"value": 5, "from": "km", "to": "mi"}
        ran = await client.call_tool("call_tool", {"name": "unit_convert", "arguments": arguments})
        check(not ran.is_error, ran)
        check(abs(ran.structured_content["value"] - 3.10685596119) < 1e-9, ran.structured_content)

        arguments = {"value": "five", "from": "km", "to": "mi"}
        bad = await client.call_tool("call_tool", {"name": "unit_convert", "arguments": arguments})
        check(bad.is_error and bad.content[0].text.startswith("error 1001: "), bad)

        limited = await client.call_tool("search_tools", {"query": "convert units", "limit": 1})
        check(len(limited.structured_content["tools"]) == 1, limited.structured_content)
    return first["name"], ran.structured_content["value"]


async def main(binary):
    for mode in ("auto", "legacy"):
        name, value = await session(binary, mode)
    print(f"ok: the Python SDK in auto and legacy modes; search found {name}; 5 km = {value} mi")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python tool_search.py PATH/TO/pleach", file=sys.stderr)
        sys.exit(2)
    try:
        asyncio.run(main(sys.argv[1]))
    except BaseException:  # noqa: BLE001 - report whatever failed, then exit 1
        traceback.print_exc()
        print("FAILED", file=sys.stderr)
        sys.exit(1)
