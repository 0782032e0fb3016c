# A remote MCP server for pleach's MCP *client* tests: the official Python SDK (`mcp` on PyPI, 2.x)
# with its high-level server, over stdio. In mcp 2.x FastMCP is called `MCPServer`
# (`mcp.server.mcpserver`); the tools are declared the FastMCP way, from typed Python functions, so
# the SDK derives each inputSchema, and the outputSchema from the return type.
# Usage: python fastmcp_server.py   (stdio; with `mcp` installed)
# Tools:
#   forecast(city: str, days: int = 3) -> Forecast   structuredContent {city, days, high_c} with
#                                                      high_c = 20.5 + days; the tool's outputSchema
#                                                      is Forecast's JSON schema.
#   shout(text: str) -> str                           text content text.upper(); no outputSchema.
from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer

server = MCPServer("fastmcp-server", version="1.0.0")


class Forecast(BaseModel):
    city: str
    days: int
    high_c: float


@server.tool()
def forecast(city: str, days: int = 3) -> Forecast:
    """The weather forecast for a city over some days."""
    return Forecast(city=city, days=days, high_c=20.5 + days)


# Plain text only: no outputSchema, no structuredContent (the SDK would otherwise wrap the str
# as {"result": ...}).
@server.tool(structured_output=False)
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


if __name__ == "__main__":
    server.run("stdio")
