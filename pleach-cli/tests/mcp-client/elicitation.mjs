// Approvals answered through MCP elicitation: the official TypeScript SDK's Client, declaring the
// elicitation capability, against a user's own server (`examples/mcp_server.rs`: its
// standard-tier `delete_expense` asks the user before every call), on stdio and over Streamable
// HTTP (initialize-first, so in an MCP session whose calls can ask the client). The client's
// elicitation handler plays the user: approve, approve with edited arguments, reject with a
// reason, dismiss. A client without the capability gets the call refused at once (1012).
// Usage: node elicitation.mjs PATH/TO/mcp_server (with @modelcontextprotocol/sdk resolvable).
// Exits 1 on any failure.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const binary = process.argv[2];
if (!binary) {
  console.error("usage: node elicitation.mjs PATH/TO/mcp_server");
  process.exit(2);
}

// The server over HTTP on a free loopback port, its URL read from the line it prints once
// listening; killed at the end whatever happens.
const httpServer = spawn(binary, ["--http", "127.0.0.1:0"], { stdio: ["ignore", "inherit", "pipe"] });
httpServer.stderr.on("data", (chunk) => process.stderr.write(chunk));
const httpUrl = await new Promise((resolve, reject) => {
  let seen = "";
  const timer = setTimeout(() => reject(new Error(`the server did not start: ${seen}`)), 20000);
  httpServer.stderr.on("data", (chunk) => {
    seen += chunk;
    const found = seen.match(/at (http:\/\/\S+\/mcp)/);
    if (found) {
      clearTimeout(timer);
      resolve(found[1]);
    }
  });
  httpServer.on("exit", (code) => reject(new Error(`the server exited (${code}): ${seen}`)));
});

const transports = [
  ["stdio", () => new StdioClientTransport({ command: binary, args: [], stderr: "inherit" })],
  ["HTTP", () => new StreamableHTTPClientTransport(new URL(httpUrl))],
];

for (const [label, transport] of transports) {
  // What the "user" answers next, and every request the server sent.
  const answers = [];
  const asked = [];
  const client = new Client({ name: "pleach-ci-elicitation", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    const answer = answers.shift();
    assert.ok(answer, `an unexpected elicitation: ${JSON.stringify(request.params)}`);
    return answer;
  });

  const ids = (listed) => JSON.parse(listed.content[0].text).map((expense) => expense.id);
  const add = async (description) => {
    const added = await client.callTool({
      name: "add_expense",
      arguments: { description, cents: 100, category: "travel" },
    });
    assert.notEqual(added.isError, true, JSON.stringify(added));
    return added.structuredContent.id;
  };
  const list = async () => ids(await client.callTool({ name: "list_expenses", arguments: { category: "travel" } }));

  try {
    await client.connect(transport());
    const [a, b, c, d] = [await add("a"), await add("b"), await add("c"), await add("d")];

    // Approve: the call runs as the model issued it.
    answers.push({ action: "accept", content: { approve: true } });
    const approved = await client.callTool({ name: "delete_expense", arguments: { id: a } });
    assert.notEqual(approved.isError, true, JSON.stringify(approved));
    assert.equal(asked.length, 1);
    assert.equal(asked[0].mode ?? "form", "form");
    assert.match(asked[0].message, /delete_expense/);
    assert.match(asked[0].message, new RegExp(`"id":${a}`));
    assert.deepEqual(asked[0].requestedSchema.required, ["approve"]);
    assert.deepEqual(await list(), [b, c, d]);

    // Approve with edited arguments: the edited call runs, not the model's.
    answers.push({ action: "accept", content: { approve: true, arguments: JSON.stringify({ id: c }) } });
    const edited = await client.callTool({ name: "delete_expense", arguments: { id: b } });
    assert.notEqual(edited.isError, true, JSON.stringify(edited));
    assert.deepEqual(await list(), [b, d]);

    // Edited arguments that do not fit the schema: refused, nothing runs.
    answers.push({ action: "accept", content: { approve: true, arguments: '{"id": "not a number"}' } });
    const badEdit = await client.callTool({ name: "delete_expense", arguments: { id: b } });
    assert.equal(badEdit.isError, true, JSON.stringify(badEdit));
    assert.match(badEdit.content[0].text, /^error 1013: /);
    assert.deepEqual(await list(), [b, d]);

    // Reject with a reason: 1013 with the user's words; nothing runs.
    answers.push({ action: "accept", content: { approve: false, reason: "keep that one" } });
    const rejected = await client.callTool({ name: "delete_expense", arguments: { id: b } });
    assert.equal(rejected.isError, true, JSON.stringify(rejected));
    assert.match(rejected.content[0].text, /^error 1013: .*keep that one/);

    // Declined and dismissed: rejections too.
    answers.push({ action: "decline" });
    const declined = await client.callTool({ name: "delete_expense", arguments: { id: b } });
    assert.match(declined.content[0].text, /^error 1013: .*declined/);
    answers.push({ action: "cancel" });
    const dismissed = await client.callTool({ name: "delete_expense", arguments: { id: d } });
    assert.match(dismissed.content[0].text, /^error 1013: .*dismissed/);
    assert.deepEqual(await list(), [b, d]);
    assert.equal(asked.length, 6);
    console.log(`ok (${label}): approvals by elicitation — approve, edit, a bad edit, reject, decline, dismiss`);
  } catch (error) {
    console.error(`FAILED (${label}):`, error);
    process.exitCode = 1;
  } finally {
    await client.close();
  }

  // A client that cannot elicit: refused at once with 1012, saying why; nothing runs.
  const plain = new Client({ name: "pleach-ci-plain", version: "1.0.0" });
  try {
    await plain.connect(transport());
    const added = await plain.callTool({ name: "add_expense", arguments: { description: "x", cents: 1, category: "food" } });
    const started = Date.now();
    const refused = await plain.callTool({ name: "delete_expense", arguments: { id: added.structuredContent.id } });
    assert.equal(refused.isError, true, JSON.stringify(refused));
    assert.match(refused.content[0].text, /^error 1012: .*needs the user's approval/);
    assert.ok(Date.now() - started < 5000, "answered at once");
    console.log(`ok (${label}): a client without elicitation gets 1012 at once`);
  } catch (error) {
    console.error(`FAILED (${label}):`, error);
    process.exitCode = 1;
  } finally {
    await plain.close();
  }
}
httpServer.kill();
