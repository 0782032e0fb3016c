// Tools that talk to their client: the official TypeScript SDK's Client against a user's own
// server (`examples/mcp_server.rs`), on stdio and over Streamable HTTP (initialize-first, so in an
// MCP session whose calls can send requests to the client). `import_receipts` logs (filtered by
// `logging/setLevel`; over HTTP on the call's own stream, before its result), `total_expenses` reports progress in its own numbers, `split_expense` elicits a typed
// answer, `categorize_expense` samples the client's model. A client that declared neither
// elicitation nor sampling gets 1020 for those two at once. Over HTTP, a call whose answer stream
// drops while it waits for the user is resumed on a new connection with `Last-Event-ID`.
// Usage: node talk.mjs PATH/TO/mcp_server (with @modelcontextprotocol/sdk resolvable).
// Exits 1 on any failure.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const binary = process.argv[2];
if (!binary) {
  console.error("usage: node talk.mjs PATH/TO/mcp_server");
  process.exit(2);
}

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
  const logs = [];
  const asked = [];
  const client = new Client(
    { name: "pleach-ci-talk", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} }, sampling: {} } },
  );
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logs.push(notification.params);
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return { action: "accept", content: { people: 3, round_up: true } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    asked.push(request.params);
    return { model: "ci-model", role: "assistant", content: { type: "text", text: " Travel\n" }, stopReason: "endTurn" };
  });
  try {
    await client.connect(transport());
    assert.ok(client.getServerCapabilities()?.logging, "the server declares logging");

    // Logs: every level until the client sets one, then that level and above.
    const receipts = { receipts: ["taxi", " ", "hotel"] };
    const imported = await client.callTool({ name: "import_receipts", arguments: receipts });
    assert.equal(imported.content[0].text, "2", JSON.stringify(imported));
    await client.setLoggingLevel("warning");
    await client.callTool({ name: "import_receipts", arguments: receipts });
    if (label === "stdio") {
      // On stdio this SDK may read a result before the notifications sent ahead of it.
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const levels = logs.map((log) => log.level);
    assert.deepEqual(levels, ["debug", "info", "warning", "info", "warning"], JSON.stringify(logs));
    assert.equal(logs[0].logger, "import");
    assert.deepEqual(logs[1].data, { imported: "taxi" });

    // Progress in the tool's own numbers.
    for (const [description, cents] of [["train", 4200], ["lunch", 1300]]) {
      await client.callTool({ name: "add_expense", arguments: { description, cents, category: "travel" } });
    }
    const ticks = [];
    const total = await client.callTool({ name: "total_expenses", arguments: {} }, undefined, {
      onprogress: (progress) => ticks.push(progress),
    });
    assert.equal(total.content[0].text, "5500", JSON.stringify(total));
    // Each report the SDK passes on carries the tool's own numbers, in order. Over HTTP both
    // come on the call's stream before the result; on stdio this SDK may read the result first
    // and then drops the reports after it (remote.mjs sees the same; the Python SDK and rmcp's
    // client get every one there: talk.py, tests/client_talk.rs).
    const expected = [[1, 2, "train"], [2, 2, "lunch"]];
    assert.ok(label === "stdio" || ticks.length === 2, "both reports reached the client");
    assert.deepEqual(
      ticks.map((tick) => [tick.progress, tick.total, tick.message]),
      expected.slice(0, ticks.length),
      JSON.stringify(ticks),
    );

    // Elicitation with a typed answer: the form is the answer type's schema.
    const split = await client.callTool({ name: "split_expense", arguments: { id: 1 } });
    assert.equal(split.content[0].text, "3 shares of 1400 cents", JSON.stringify(split));
    const form = asked[0].requestedSchema;
    assert.deepEqual(form.required, ["people"]);
    assert.equal(form.properties.people.type, "integer");
    assert.equal(form.properties.people.maximum, 20);
    assert.equal(form.properties.round_up.type, "boolean");

    // Sampling: the client's model answers.
    const category = await client.callTool({ name: "categorize_expense", arguments: { description: "a taxi" } });
    assert.equal(category.content[0].text, "travel", JSON.stringify(category));
    assert.equal(asked[1].maxTokens, 5);
    assert.equal(asked[1].systemPrompt, "You sort expenses into categories.");
    assert.match(asked[1].messages[0].content.text, /a taxi/);
    console.log(`ok (${label}): logs, progress, a typed elicitation and sampling`);
  } catch (error) {
    console.error(`FAILED (${label}):`, error);
    process.exitCode = 1;
  } finally {
    await client.close();
  }

  // A client that declared neither: 1020 at once for each.
  const plain = new Client({ name: "pleach-ci-plain", version: "1.0.0" });
  try {
    await plain.connect(transport());
    await plain.callTool({ name: "add_expense", arguments: { description: "x", cents: 1, category: "food" } });
    for (const [name, args] of [["split_expense", { id: 1 }], ["categorize_expense", { description: "x" }]]) {
      const started = Date.now();
      const refused = await plain.callTool({ name, arguments: args });
      assert.equal(refused.isError, true, JSON.stringify(refused));
      assert.match(refused.content[0].text, /^error 1020: /);
      assert.ok(Date.now() - started < 5000, "answered at once");
    }
    console.log(`ok (${label}): a client without elicitation and sampling gets 1020 at once`);
  } catch (error) {
    console.error(`FAILED (${label}):`, error);
    process.exitCode = 1;
  } finally {
    await plain.close();
  }
}

// Resumption: the answer stream of a call waiting for the user drops (the client's connection is
// cut right after the stream's first event, whose id is the resumption token); a new connection
// in the same MCP session resumes it with `Last-Event-ID`, gets the question again and the result.
{
  const info = { name: "pleach-ci-resume", version: "1.0.0" };
  const capabilities = { capabilities: { elicitation: { form: {} } } };
  const first = new StreamableHTTPClientTransport(new URL(httpUrl));
  const dropped = new Client(info, capabilities);
  // The user never answers on the first connection.
  dropped.setRequestHandler(ElicitRequestSchema, () => new Promise(() => {}));
  const second = () => new StreamableHTTPClientTransport(new URL(httpUrl), { sessionId: first.sessionId });
  const resumed = new Client(info, capabilities);
  const asked = [];
  resumed.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return { action: "accept", content: { people: 3 } };
  });
  try {
    await dropped.connect(first);
    const added = await dropped.callTool({
      name: "add_expense",
      arguments: { description: "dinner", cents: 9000, category: "food" },
    });
    const { id } = JSON.parse(added.content[0].text);
    const call = { method: "tools/call", params: { name: "split_expense", arguments: { id } } };
    const token = await new Promise((resolve, reject) => {
      dropped
        .request(call, CallToolResultSchema, { onresumptiontoken: resolve })
        .then(() => reject(new Error("the call ended before its stream dropped")), () => {});
    });
    await first.close();
    // `sessionId` given: the client joins the session without a new `initialize`.
    await resumed.connect(second());
    const result = await resumed.request(call, CallToolResultSchema, { resumptionToken: token });
    assert.equal(result.content[0].text, "3 shares of 3000 cents", JSON.stringify(result));
    assert.equal(asked.length, 1, JSON.stringify(asked));
    assert.match(asked[0].message, /^Split expense/);
    console.log(`ok (HTTP): a call's dropped stream resumed with Last-Event-ID ${token}`);
  } catch (error) {
    console.error("FAILED (HTTP resumption):", error);
    process.exitCode = 1;
  } finally {
    await resumed.close();
  }
}
httpServer.kill();
