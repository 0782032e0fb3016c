// The real-client MCP test over Streamable HTTP: the official TypeScript SDK's Client (its
// StreamableHTTPClientTransport, initialize-based, MCP 2025-11-25) against `pleach mcp --http`
// started here on a free loopback port with a token file.
// Usage: node client-http.mjs PATH/TO/pleach (with @modelcontextprotocol/sdk resolvable, as for
// client.mjs). Exits 1 on any failure.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const binary = process.argv[2];
if (!binary) {
  console.error("usage: node client-http.mjs PATH/TO/pleach");
  process.exit(2);
}

const folder = fs.mkdtempSync(path.join(os.tmpdir(), "pleach-http-"));
const tokenFile = path.join(folder, "tokens");
const token = "ci-" + Math.random().toString(36).slice(2);
fs.writeFileSync(tokenFile, `${token}\n`);
const root = path.join(folder, "root");
fs.mkdirSync(root);

// The server, its URL read from the line it prints once listening.
const server = spawn(
  binary,
  ["mcp", "--http", "127.0.0.1:0", "--token-file", tokenFile, "--root", root, "--allow-program", "sleep"],
  { stdio: ["ignore", "ignore", "pipe"] },
);
let log = "";
const url = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`no URL within 20 s:\n${log}`)), 20000);
  server.stderr.on("data", (chunk) => {
    log += chunk;
    // The whole line: stderr may arrive in pieces, and a URL cut short is another address.
    const found = /listening on (http:\/\/\S+)\n/.exec(log);
    if (found) {
      clearTimeout(timer);
      resolve(found[1]);
    }
  });
  server.on("exit", (code) => reject(new Error(`the server exited (${code}):\n${log}`)));
});
const exited = new Promise((resolve) => server.on("exit", (code, signal) => resolve({ code, signal })));

const connect = async (headers) => {
  const client = new Client({ name: "pleach-ci-http", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await client.connect(transport);
  return client;
};

try {
  // Without the token: refused (401), the client cannot even initialize.
  await assert.rejects(connect({}), /Authorization: Bearer/);
  await assert.rejects(connect({ Authorization: "Bearer wrong" }), /not accepted/);

  const client = await connect({ Authorization: `Bearer ${token}` });
  assert.equal(client.getServerVersion()?.name, "pleach");
  const { tools } = await client.listTools();
  const math = tools.find((t) => t.name === "math");
  assert.ok(math, `math listed: ${tools.map((t) => t.name).join(", ")}`);
  assert.deepEqual(math.inputSchema.required, ["expression"]);

  const good = await client.callTool({ name: "math", arguments: { expression: "6*7" } });
  assert.notEqual(good.isError, true, JSON.stringify(good));
  assert.equal(good.structuredContent.result, 42);

  const bad = await client.callTool({ name: "math", arguments: { expression: 42 } });
  assert.equal(bad.isError, true, JSON.stringify(bad));
  assert.match(bad.content[0].text, /^error 1001: /);

  await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }), /unknown tool/);

  // Thirty-two calls at once.
  const many = await Promise.all(
    Array.from({ length: 32 }, (_, i) => client.callTool({ name: "math", arguments: { expression: `${i}+1` } })),
  );
  assert.deepEqual(
    many.map((r) => r.structuredContent.result),
    Array.from({ length: 32 }, (_, i) => i + 1),
  );

  // SIGTERM with a call running: the call still gets its result, the server exits 0.
  const running = client.callTool({ name: "shell_exec", arguments: { program: "sleep", args: ["1"] } });
  await new Promise((resolve) => setTimeout(resolve, 300));
  server.kill("SIGTERM");
  const finished = await running;
  assert.notEqual(finished.isError, true, JSON.stringify(finished));
  const { code } = await exited;
  assert.equal(code, 0, `exit code after the drain:\n${log}`);
  await client.close();
  console.log(`ok (HTTP): ${tools.length} tools listed; 401 without the token; math 6*7 = 42; drained on SIGTERM`);
} catch (error) {
  console.error("FAILED:", error, `\nserver log:\n${log}`);
  process.exitCode = 1;
} finally {
  server.kill("SIGKILL");
  fs.rmSync(folder, { recursive: true, force: true });
}
