// Remote tools against servers nobody here wrote: the official TypeScript SDK's McpServer
// (`../mcp-servers/ts-server.mjs`) over stdio and Streamable HTTP, and the official Python SDK's
// MCPServer (`../mcp-servers/fastmcp_server.py`) over stdio, used through `pleach list`,
// `pleach call` and `pleach mcp --http` as a gateway that the TypeScript SDK's client calls.
//   - listed with their names prefixed, annotations mapped (readOnlyHint: parallel and
//     idempotent; idempotentHint: idempotent; destructiveHint: the standard tier);
//   - a call is answered; a bad one is refused with 1001 and the server never sees it (its call
//     log); an isError result is 1008 with the server's text; a call over its timeout is cancelled
//     and the server observes the cancellation;
//   - structured output from the Python server, checked against its outputSchema;
//   - through the gateway: local and remote tools on one endpoint behind one token, the remote
//     server's progress reaching the client, and the remote server restarted under it: a call
//     made while it is down fails with 1017, and calls succeed once it is back;
//   - the remote server talking to the client through the gateway (stdio and HTTP): its logs
//     (stdio), progress, elicitation and sampling during a call reach the gateway's client, which
//     answers; over HTTP two calls at once each get their own answer; a client that declared neither
//     capability makes the remote server's requests fail with a JSON-RPC error at once;
//   - trace context: `pleach call --otlp` sends the call's W3C `traceparent` in the request's
//     `_meta`, which the TypeScript SDK's server receives, with the trace id and parent span id of
//     the spans pleach exported (to a loopback stand-in for an OTLP collector, http/json).
// Usage: node remote.mjs PATH/TO/pleach PATH/TO/python (run from a folder where
// @modelcontextprotocol/sdk is installed and ts-server.mjs and fastmcp_server.py were copied).
// Exits 1 on any failure.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [binary, python] = process.argv.slice(2);
if (!binary || !python) {
  console.error("usage: node remote.mjs PATH/TO/pleach PATH/TO/python");
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const tsServer = path.join(here, "ts-server.mjs");
const pyServer = path.join(here, "fastmcp_server.py");
const folder = fs.mkdtempSync(path.join(os.tmpdir(), "pleach-remote-"));
const callLog = path.join(folder, "calls.log");
// Pinned definitions (the `--mcp` servers' lock files) go to the test's folder, not the user's.
const env = { ...process.env, MCP_CALL_LOG: callLog, XDG_CONFIG_HOME: folder };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const logged = () =>
  fs.existsSync(callLog)
    ? fs.readFileSync(callLog, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line))
    : [];

/** `pleach ARGS`: exit code, stdout, stderr. */
function pleach(args) {
  const run = spawnSync(binary, args, { env, encoding: "utf8", timeout: 60000 });
  if (run.error) throw run.error;
  return { code: run.status, out: run.stdout, err: run.stderr };
}
/** `pleach ARGS` without blocking this process (so a collector in it can answer). */
function pleachAsync(args, extraEnv = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { env: { ...env, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (err += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}
/** The events `pleach call … --json` printed. */
const events = (out) => out.split("\n").filter(Boolean).map((line) => JSON.parse(line));
const terminal = (out) => events(out).find((e) => e.type === "tool.completed" || e.type === "tool.failed");

/** Starts `command args`, resolving with the URL it prints on stderr (`… listening on URL`). */
function serve(command, args, childEnv = env) {
  const child = spawn(command, args, { env: childEnv, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL within 20 s:\n${log}`)), 20000);
    child.stderr.on("data", (chunk) => {
      log += chunk;
      const found = /listening on (http:\/\/\S+)\n/.exec(log);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    child.on("exit", (code) => reject(new Error(`${command} exited (${code}):\n${log}`)));
  });
  return { child, url, log: () => log };
}
const stopped = (child) =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.on("exit", resolve);
    child.kill("SIGTERM");
  });

/**
 * The remote server's `chatter`, `ask` and `sample` through a gateway: `transport()` reaches it.
 * The client declares elicitation and sampling and answers each question with the name
 * `name-TAG`; `logsArrive` whether log messages reach it (over HTTP, pleach's server does not
 * send them on the call's stream yet: docs/mcp.md, "Logging"); `atOnce` whether two calls ask
 * at the same time.
 */
async function talksThrough(label, transport, logsArrive, atOnce) {
  const logs = [];
  const client = new Client({ name: "remote-talk", version: "1.0.0" }, { capabilities: { elicitation: { form: {} }, sampling: {} } });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => logs.push(notification.params));
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const tag = /^Name for (\S+)\?$/.exec(request.params.message)?.[1];
    await sleep(100); // the other call's question arrives meanwhile
    return { action: "accept", content: { name: `name-${tag}` } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    assert.equal(request.params.systemPrompt, "One word.");
    return { model: "client-model", role: "assistant", content: { type: "text", text: "Teal" } };
  });
  await client.connect(transport());

  const ticks = [];
  const chatted = await client.callTool({ name: "ts__chatter", arguments: {} }, undefined, {
    onprogress: (progress) => ticks.push(progress),
  });
  assert.equal(chatted.content[0].text, "chatted", JSON.stringify(chatted));
  assert.deepEqual(
    ticks.map((t) => [t.progress, t.total, t.message]),
    [[1, 2, "half"], [2, 2, "done"]],
    "the remote server's own progress numbers",
  );
  if (logsArrive) {
    for (let i = 0; i < 20 && logs.length < 2; i++) await sleep(50);
    assert.deepEqual(
      logs.map((l) => [l.level, l.logger, l.data]),
      [["info", "ts", { step: 1 }], ["warning", "ts", "careful"]],
      "the remote server's logs (named for it when it names no logger)",
    );
  }

  // Over HTTP each question comes on its call's own stream, so two calls may ask at once; over
  // stdio nothing says which call a question belongs to, so they ask one after the other.
  const ask = (tag) => client.callTool({ name: "ts__ask", arguments: { tag } });
  const [first, second] = atOnce ? await Promise.all([ask("a"), ask("b")]) : [await ask("a"), await ask("b")];
  assert.deepEqual(JSON.parse(first.content[0].text), { action: "accept", content: { name: "name-a" } });
  assert.deepEqual(JSON.parse(second.content[0].text), { action: "accept", content: { name: "name-b" } });
  const sampled = await client.callTool({ name: "ts__sample", arguments: {} });
  assert.deepEqual(JSON.parse(sampled.content[0].text), {
    model: "client-model",
    role: "assistant",
    content: { type: "text", text: "Teal" },
  });
  await client.close();

  const mute = new Client({ name: "remote-mute", version: "1.0.0" });
  await mute.connect(transport());
  const started = Date.now();
  for (const name of ["ts__ask", "ts__sample"]) {
    const refused = await mute.callTool({ name, arguments: name === "ts__ask" ? { tag: "m" } : {} });
    assert.match(refused.content[0].text, /^error -32601: .*pleach host did not answer/, `${name}: ${refused.content[0].text}`);
  }
  assert.ok(Date.now() - started < 5000, "refused at once");
  await mute.close();
  console.log(
    `  gateway (${label}): the remote server's ${logsArrive ? "logs, " : ""}progress, elicitation (${atOnce ? "two calls at once" : "two calls"}) and sampling reached the client; a client without them: -32601 at once`,
  );
}

const children = [];
let failed = false;
try {
  // ---- stdio: the TypeScript SDK's server through `pleach list` and `pleach call`.
  const tsStdio = ["--mcp-stdio", `ts=node ${tsServer} stdio`];
  const listed = pleach(["list", "--json", ...tsStdio]);
  assert.equal(listed.code, 0, listed.err);
  const rows = new Map(JSON.parse(listed.out).map((row) => [row.name, row]));
  for (const name of ["ts__echo", "ts__add", "ts__fail", "ts__slow", "ts__delete_file", "math"]) {
    assert.ok(rows.has(name), `${name} listed: ${[...rows.keys()].join(", ")}`);
  }
  assert.equal(rows.get("ts__echo").batching, "parallel", "readOnlyHint: parallel");
  assert.equal(rows.get("ts__delete_file").tier, "standard", "destructiveHint: the standard tier");
  assert.equal(rows.get("ts__echo").idempotent, true, "readOnlyHint: idempotent");
  assert.equal(rows.get("ts__delete_file").idempotent, true, "idempotentHint of a write: idempotent");
  assert.equal(rows.get("ts__fail").idempotent, false, "no hint, not a read: not idempotent");

  const echo = pleach(["call", "ts__echo", "--args", '{"text": "hello"}', "--json", ...tsStdio]);
  assert.equal(echo.code, 0, echo.err);
  assert.equal(terminal(echo.out).result, "hello");

  fs.rmSync(callLog, { force: true });
  const bad = pleach(["call", "ts__add", "--args", '{"a": 1, "b": "two"}', "--json", ...tsStdio]);
  assert.equal(bad.code, 1);
  assert.equal(terminal(bad.out).error.code, 1001, bad.out);
  assert.equal(terminal(bad.out).error.path, "/b");
  const good = pleach(["call", "ts__add", "--args", '{"a": 1, "b": 2.5}', "--json", ...tsStdio]);
  assert.deepEqual(terminal(good.out).result, { sum: 3.5 });
  assert.deepEqual(
    logged().filter((e) => e.call === "add").map((e) => e.arguments),
    [{ a: 1, b: 2.5 }],
    "the server saw the good call only",
  );

  const fail = pleach(["call", "ts__fail", "--args", '{"reason": "the disk is full"}', "--json", ...tsStdio]);
  assert.equal(fail.code, 1);
  assert.equal(terminal(fail.out).error.code, 1008);
  assert.equal(terminal(fail.out).error.message, "the disk is full");

  fs.rmSync(callLog, { force: true });
  const slow = pleach(["call", "ts__slow", "--args", '{"ms": 30000}', "--timeout", "700ms", "--json", ...tsStdio]);
  assert.equal(terminal(slow.out).error.code, 1010, slow.out);
  for (let i = 0; i < 50 && !logged().some((e) => e.cancelled === "slow"); i++) await sleep(100);
  assert.ok(logged().some((e) => e.cancelled === "slow"), `the server saw the cancellation: ${JSON.stringify(logged())}`);
  console.log("  stdio (TypeScript SDK): listed, called, bad call refused unseen, isError, timeout cancelled");

  // ---- a gateway on stdio: the TypeScript SDK's client in front, its server behind.
  await talksThrough(
    "stdio",
    () => new StdioClientTransport({ command: binary, args: ["mcp", ...tsStdio], env, stderr: "inherit" }),
    true,
    false,
  );

  // ---- trace context: the TypeScript SDK's server receives the trace pleach exported.
  const exported = [];
  const collector = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      exported.push({ path: req.url, body });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise((resolve) => collector.listen(0, "127.0.0.1", resolve));
  fs.rmSync(callLog, { force: true });
  const traced = await pleachAsync(
    ["call", "ts__echo", "--args", '{"text": "traced"}', "--json", "--otlp", `http://127.0.0.1:${collector.address().port}`, ...tsStdio],
    { OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" },
  );
  collector.close();
  assert.equal(traced.code, 0, traced.err);
  const meta = logged().find((e) => e.call === "echo")?.meta ?? {};
  const parent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(meta.traceparent ?? "");
  assert.ok(parent, `a W3C traceparent in the request's _meta: ${JSON.stringify(meta)}`);
  const [, traceId, parentSpanId] = parent;
  const spans = exported
    .filter((request) => request.path === "/v1/traces")
    .flatMap((request) => JSON.parse(request.body).resourceSpans)
    .flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans));
  const clientSpan = spans.find((span) => span.spanId === parentSpanId);
  assert.ok(clientSpan, `the server's parent span was exported: ${spans.map((s) => `${s.name} ${s.spanId}`).join(", ")}`);
  assert.equal(clientSpan.traceId, traceId, "the same trace on both sides");
  assert.match(clientSpan.name, /^tools\/call /);
  assert.ok([3, "SPAN_KIND_CLIENT"].includes(clientSpan.kind), `a client span: ${clientSpan.kind}`);
  const executed = spans.find((span) => span.name === "execute_tool ts__echo");
  assert.ok(executed, "the execute_tool span was exported");
  assert.equal(executed.traceId, traceId, "execute_tool is in the same trace");
  console.log(`  trace context: the TypeScript SDK's server received traceparent ${meta.traceparent}, the trace pleach exported`);

  // ---- stdio: the Python SDK's server, structured output against its outputSchema.
  const pyStdio = ["--mcp-stdio", `py=${python} ${pyServer}`];
  const forecast = pleach(["call", "py__forecast", "--args", '{"city": "Oslo"}', "--json", ...pyStdio]);
  assert.equal(forecast.code, 0, forecast.err + forecast.out);
  assert.deepEqual(terminal(forecast.out).result, { city: "Oslo", days: 3, high_c: 23.5 });
  const shout = pleach(["call", "py__shout", "--args", '{"text": "quiet"}', "--json", ...pyStdio]);
  assert.equal(terminal(shout.out).result, "QUIET");
  const pyBad = pleach(["call", "py__forecast", "--args", '{"city": 7}', "--json", ...pyStdio]);
  assert.equal(terminal(pyBad.out).error.code, 1001);
  console.log("  stdio (Python SDK): structured output checked against its outputSchema, text, bad call refused");

  // ---- Streamable HTTP and the gateway: `pleach mcp --http … --mcp URL`.
  const remoteToken = "remote-" + Math.random().toString(36).slice(2);
  const gatewayToken = "gateway-" + Math.random().toString(36).slice(2);
  fs.writeFileSync(path.join(folder, "remote-token"), `${remoteToken}\n`);
  fs.writeFileSync(path.join(folder, "gateway-tokens"), `${gatewayToken}\n`);
  let remote = serve("node", [tsServer, "http", "0", "--token", remoteToken]);
  children.push(remote.child);
  const remoteUrl = await remote.url;
  const port = new URL(remoteUrl).port;

  const unauthorized = pleach(["list", "--mcp", `ts=${remoteUrl}`]);
  assert.equal(unauthorized.code, 2, "no token: cannot connect");
  assert.match(unauthorized.err, /cannot connect to the MCP server `ts`/);

  const gateway = serve(binary, [
    "mcp", "--http", "127.0.0.1:0", "--token-file", path.join(folder, "gateway-tokens"),
    "--mcp", `ts=${remoteUrl}`, "--mcp-token-file", path.join(folder, "remote-token"),
  ]);
  children.push(gateway.child);
  const gatewayUrl = await gateway.url;
  const client = new Client({ name: "remote-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(gatewayUrl), { requestInit: { headers: { Authorization: `Bearer ${gatewayToken}` } } }),
  );
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const name of ["ts__echo", "ts__slow", "math"]) assert.ok(names.includes(name), `${name}: ${names.join(", ")}`);
  const viaGateway = await client.callTool({ name: "ts__echo", arguments: { text: "through" } });
  assert.equal(viaGateway.content[0].text, "through");
  const local = await client.callTool({ name: "math", arguments: { expression: "6*7" } });
  assert.equal(local.structuredContent.result, 42);
  const refused = await client.callTool({ name: "ts__add", arguments: { a: "x", b: 1 } });
  assert.equal(refused.isError, true);
  assert.match(refused.content[0].text, /^error 1001: /);

  const ticks = [];
  const slowed = await client.callTool({ name: "ts__slow", arguments: { ms: 450 } }, undefined, {
    onprogress: (progress) => ticks.push(progress),
  });
  assert.equal(slowed.content[0].text, "slept 450");
  assert.ok(ticks.length >= 2, `the remote server's progress reached the client: ${JSON.stringify(ticks)}`);
  console.log(`  gateway: local and remote tools behind one token; ${ticks.length} progress reports passed through`);
  await talksThrough(
    "HTTP",
    () => new StreamableHTTPClientTransport(new URL(gatewayUrl), { requestInit: { headers: { Authorization: `Bearer ${gatewayToken}` } } }),
    false,
    true,
  );

  // The remote server restarted under the gateway.
  await stopped(remote.child);
  const down = await client.callTool({ name: "ts__echo", arguments: { text: "anyone?" } });
  assert.equal(down.isError, true, JSON.stringify(down));
  assert.match(down.content[0].text, /^error 1017: /);
  remote = serve("node", [tsServer, "http", port, "--token", remoteToken]);
  children.push(remote.child);
  await remote.url;
  let back;
  for (let i = 0; i < 100; i++) {
    back = await client.callTool({ name: "ts__echo", arguments: { text: "back" } });
    if (back.isError !== true) break;
    assert.match(back.content[0].text, /^error 1017: /, "while reconnecting: 1017");
    await sleep(200);
  }
  assert.equal(back.content[0].text, "back", JSON.stringify(back));
  await client.close();
  console.log("  gateway: the remote server restarted: 1017 while it was down, then served again");
  console.log("ok (remote tools): the official TypeScript and Python SDKs' servers, over stdio, HTTP and through the gateway");
} catch (error) {
  console.error("FAILED:", error);
  failed = true;
} finally {
  for (const child of children) child.kill("SIGKILL");
  fs.rmSync(folder, { recursive: true, force: true });
  process.exit(failed ? 1 : 0);
}
