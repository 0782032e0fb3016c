// The official TypeScript SDK's Client against `pleach mcp --tool-search --always math` on stdio:
// tools/list gives the search tool, the call-by-name tool and `math` only; a search finds
// `unit_convert` with its input schema, and `call_tool` runs it.
// Usage: node tool-search.mjs PATH/TO/pleach   (with @modelcontextprotocol/sdk resolvable, as
// for client.mjs). Exits 1 on any failure.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const binary = process.argv[2];
if (!binary) {
  console.error("usage: node tool-search.mjs PATH/TO/pleach");
  process.exit(2);
}

const transport = new StdioClientTransport({
  command: binary,
  args: ["mcp", "--tool-search", "--always", "math"],
  stderr: "inherit",
});
const client = new Client({ name: "pleach-ci", version: "1.0.0" });

try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ["search_tools", "call_tool", "math"]);
  const search = tools[0];
  assert.deepEqual(search.inputSchema.required, ["query"]);

  const found = await client.callTool({
    name: "search_tools",
    arguments: { query: "convert kilometers to miles" },
  });
  assert.notEqual(found.isError, true, JSON.stringify(found));
  const first = found.structuredContent.tools[0];
  assert.equal(first.name, "unit_convert", JSON.stringify(found.structuredContent));
  assert.deepEqual([...first.inputSchema.required].sort(), ["from", "to", "value"]);

  const ran = await client.callTool({
    name: "call_tool",
    arguments: { name: "unit_convert", arguments: { value: 5, from: "km", to: "mi" } },
  });
  assert.notEqual(ran.isError, true, JSON.stringify(ran));
  assert.ok(Math.abs(ran.structuredContent.value - 3.10685596119) < 1e-9, JSON.stringify(ran));

  // A tool error from the tool run by name is the tool's, as from tools/call.
  const bad = await client.callTool({
    name: "call_tool",
    arguments: { name: "unit_convert", arguments: { value: "five", from: "km", to: "mi" } },
  });
  assert.equal(bad.isError, true, JSON.stringify(bad));
  assert.match(bad.content[0].text, /^error 1001: /);

  console.log(`ok: ${tools.length} tools listed; search found ${first.name}; 5 km = ${ran.structuredContent.value} mi`);
} catch (error) {
  console.error("FAILED:", error);
  process.exitCode = 1;
} finally {
  await client.close();
}
