// Sessions across replicas, tested for real: a `redis-server` (Debian package) on a free loopback
// port, `deploy/replicas.sh` with two `pleach mcp --http --session-store redis://…` replicas
// behind nginx round robin, and the official TypeScript SDK's client (which starts its session
// with `initialize` and sends `Mcp-Session-Id` after):
//   - a scratchpad note set through nginx is read back through nginx, and straight from each
//     replica with the same session id: every replica sees the session and its notes;
//   - a note set on one replica is read on the other;
//   - after a replica is killed (SIGKILL) and started again, the session and its notes are still
//     there, on the new process too;
//   - another session sees none of them; a DELETE ends the session everywhere (404 after);
//   - GET (a stream outside a request) is 405.
// Usage: node sessions.mjs PATH/TO/pleach [PATH/TO/replicas.sh] (with @modelcontextprotocol/sdk
// resolvable; run from the folder it is installed in). Exits 1 on any failure.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startRedis } from "./redis.mjs";
import { startReplicas } from "./replicas-process.mjs";

const binary = process.argv[2];
const script = process.argv[3] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "replicas.sh");
if (!binary) {
  console.error("usage: node sessions.mjs PATH/TO/pleach [PATH/TO/replicas.sh]");
  process.exit(2);
}

const folder = fs.mkdtempSync(path.join(os.tmpdir(), "pleach-sessions-"));
const token = "sessions-" + Math.random().toString(36).slice(2);
fs.writeFileSync(path.join(folder, "tokens"), `${token}\n`);
fs.mkdirSync(path.join(folder, "root"));
const headers = { Authorization: `Bearer ${token}` };

let redis;
let replicas;
let failed = false;
try {
  redis = await startRedis(folder);

  const started = startReplicas(script, binary, [
    "--token-file", path.join(folder, "tokens"), "--root", path.join(folder, "root"),
    "--session-store", redis.url, "--session-ttl", "10m",
  ]);
  replicas = started;
  const { expectLine, command } = started;
  const replicaLines = [expectLine(/^replica 0 /), expectLine(/^replica 1 /)];
  const url = (await expectLine(/^url /)).slice(4);
  const ports = (await Promise.all(replicaLines)).map((line) => Number(line.split(" ").pop()));
  const direct = (i) => `http://127.0.0.1:${ports[i]}/mcp`;

  // A client of a session that already exists (the SDK skips `initialize` when given its id).
  const join = async (target, sessionId) => {
    const client = new Client({ name: "sessions-join", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(target), { sessionId, requestInit: { headers } }));
    return client;
  };
  // A raw `tools/list` in session `sessionId` at `target`, as an initialize-based client sends it.
  const listIn = (target, sessionId) =>
    fetch(target, {
      method: "POST",
      headers: {
        ...headers,
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        "Mcp-Session-Id": sessionId,
        "MCP-Protocol-Version": "2025-11-25",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list", params: {} }),
    });
  const note = async (client, operation, key, value) => {
    const result = await client.callTool({ name: "scratchpad", arguments: { operation, key, value } });
    assert.notEqual(result.isError, true, `scratchpad ${operation} ${key}: ${JSON.stringify(result.content)}`);
    return result.structuredContent;
  };

  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: "sessions", version: "1.0.0" });
  await client.connect(transport);
  const sessionId = transport.sessionId;
  assert.ok(sessionId, "the server gives the session an id");
  await note(client, "set", "plan", "1. read 2. sum");
  for (let i = 0; i < 4; i++) {
    assert.equal((await note(client, "get", "plan")).value, "1. read 2. sum", `read ${i} through nginx`);
  }
  for (const i of [0, 1]) {
    const onReplica = await join(direct(i), sessionId);
    assert.equal((await note(onReplica, "get", "plan")).value, "1. read 2. sum", `read on replica ${i}`);
    await onReplica.close();
  }
  console.log("  a note set through nginx is read through nginx and on each replica");

  const on0 = await join(direct(0), sessionId);
  const on1 = await join(direct(1), sessionId);
  await note(on1, "set", "todo", "check totals");
  assert.equal((await note(on0, "get", "todo")).value, "check totals");
  await note(on0, "delete", "todo");
  assert.equal((await note(on1, "list")).note_count, 1, "a delete on replica 0 is seen on replica 1");
  await on0.close();
  await on1.close();
  console.log("  a note set on one replica is read on the other; a delete is seen on both");

  await command("kill 0");
  const reborn = await join(direct(0), sessionId);
  assert.equal((await note(reborn, "get", "plan")).value, "1. read 2. sum", "after SIGKILL, on the new process");
  await reborn.close();
  for (let i = 0; i < 4; i++) {
    assert.equal((await note(client, "get", "plan")).value, "1. read 2. sum", `read ${i} through nginx after the kill`);
  }
  console.log("  the session and its notes outlive a SIGKILLed replica");

  await command("restart 1");
  for (let i = 0; i < 4; i++) {
    assert.equal((await note(client, "get", "plan")).value, "1. read 2. sum", `read ${i} after a rolling restart`);
  }
  console.log("  and a rolling restart (SIGTERM, drained) of the other");

  const otherTransport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const other = new Client({ name: "sessions-other", version: "1.0.0" });
  await other.connect(otherTransport);
  assert.notEqual(otherTransport.sessionId, sessionId);
  assert.equal((await note(other, "list")).note_count, 0, "another session sees no note of the first");
  await other.close();

  const get = await fetch(direct(1), {
    headers: { ...headers, Accept: "text/event-stream", "Mcp-Session-Id": sessionId },
  });
  assert.equal(get.status, 405, "GET outside a request");

  await transport.terminateSession();
  await client.close();
  for (const i of [0, 1]) {
    const response = await listIn(direct(i), sessionId);
    assert.equal(response.status, 404, `the deleted session on replica ${i}`);
  }
  console.log("  another session sees no note; GET is 405; a DELETE ends the session on every replica");

  // Redis gone: a session's request is refused at once with 503 and Retry-After, not left hanging.
  redis.stop();
  const asked = Date.now();
  const refused = await listIn(direct(0), sessionId);
  assert.equal(refused.status, 503, "a request while the store is down");
  assert.equal(refused.headers.get("retry-after"), "1");
  assert.ok(Date.now() - asked < 20000, `refused within 20 s (took ${Date.now() - asked} ms)`);
  console.log(`  with Redis down, a session's request gets 503 in ${Date.now() - asked} ms`);
  console.log("ok: MCP sessions and their scratchpad live in Redis, shared by the replicas behind nginx");
} catch (error) {
  console.error("FAILED:", error);
  failed = true;
} finally {
  await replicas?.stop();
  redis?.stop();
  fs.rmSync(folder, { recursive: true, force: true });
  process.exit(failed ? 1 : 0);
}
