// The TypeScript SDK's own stdio server for `mcp-stdio`'s comparison: `add(a, b)` on McpServer
// over StdioServerTransport, its result the sum as text (docs/performance.md, "`mcp-stdio`").
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "node-add", version: "1.0.0" });
server.tool(
  "add",
  "Adds two integers.",
  { a: z.number().int(), b: z.number().int() },
  async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
);
await server.connect(new StdioServerTransport());
