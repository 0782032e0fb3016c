// The load-balanced deployment, tested for real: `deploy/replicas.sh` starts nginx round robin in
// front of two `pleach mcp --http` replicas; eight official TypeScript SDK clients call tools
// through nginx without pause while
//   (a) each replica in turn is restarted (out of rotation, SIGTERM, drained, started, back):
//       no call fails;
//   (b) one replica is killed with SIGKILL: every call ends (a result or a clear error, none
//       hangs), and the calls after it succeed.
// With `--session-store`, the replicas keep MCP sessions in a `redis-server` the test starts
// (`deploy/test/sessions.mjs` tests the sessions themselves): the same holds.
// Usage: node replicas.mjs PATH/TO/pleach [PATH/TO/replicas.sh] [--session-store] (with
// @modelcontextprotocol/sdk resolvable; run from the folder it is installed in). Exits 1 on any
// failure.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startRedis } from "./redis.mjs";
import { startReplicas } from "./replicas-process.mjs";

const withSessions = process.argv.includes("--session-store");
const [binary, scriptArg] = process.argv.slice(2).filter((arg) => arg !== "--session-store");
const script = scriptArg ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "replicas.sh");
if (!binary) {
  console.error("usage: node replicas.mjs PATH/TO/pleach [PATH/TO/replicas.sh] [--session-store]");
  process.exit(2);
}
const CLIENTS = 8;
const CALL_BOUND_MS = 30000;

const folder = fs.mkdtempSync(path.join(os.tmpdir(), "pleach-replicas-"));
const token = "replicas-" + Math.random().toString(36).slice(2);
fs.writeFileSync(path.join(folder, "tokens"), `${token}\n`);
fs.mkdirSync(path.join(folder, "root"));

const redis = withSessions ? await startRedis(folder) : undefined;
const { expectLine, command, stop } = startReplicas(script, binary, [
  "--token-file", path.join(folder, "tokens"), "--root", path.join(folder, "root"),
  "--allow-program", "sleep", "--timeout", "20s", ...(redis ? ["--session-store", redis.url] : []),
]);

// One client calling without pause; each outcome recorded with the phase it started in.
let phase = "warm-up";
let running = true;
let kills = 0;
const outcomes = [];
const bounded = (promise) =>
  Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`hung for ${CALL_BOUND_MS} ms`)), CALL_BOUND_MS)),
  ]);
async function worker(url, n) {
  const client = new Client({ name: `replicas-${n}`, version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  );
  for (let i = 0; running; i++) {
    const started = phase;
    const epoch = kills;
    const slow = i % 3 === 0; // a third of the calls run 0.3 s, so restarts meet calls in flight
    const call = slow
      ? { name: "shell_exec", arguments: { program: "sleep", args: ["0.3"] } }
      : { name: "math", arguments: { expression: `${n}*1000+${i}` } };
    try {
      const result = await bounded(client.callTool(call));
      const ok = result.isError !== true && (slow || result.structuredContent?.result === n * 1000 + i);
      outcomes.push({ phase: kills === epoch ? started : "kill", ok, detail: ok ? "" : JSON.stringify(result) });
    } catch (error) {
      outcomes.push({ phase: kills === epoch ? started : "kill", ok: false, detail: String(error) });
    }
  }
  await client.close();
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let failed = false;
try {
  const url = (await expectLine(/^url /, 60000)).slice(4);
  const workers = Array.from({ length: CLIENTS }, (_, n) => worker(url, n));
  await sleep(1000);

  phase = "rolling restart";
  await command("restart 0");
  await sleep(500);
  await command("restart 1");
  await sleep(500);

  phase = "kill";
  kills += 1; // a call in flight when the kill is sent counts as the kill's
  await command("kill 1");
  phase = "after kill";
  await sleep(1500);
  running = false;
  await Promise.all(workers);

  const of = (name) => outcomes.filter((o) => o.phase === name);
  for (const name of ["warm-up", "rolling restart", "kill", "after kill"]) {
    const all = of(name);
    const bad = all.filter((o) => !o.ok);
    console.log(`  ${name}: ${all.length} calls, ${bad.length} failed${bad.length ? `: ${bad[0].detail}` : ""}`);
  }
  for (const name of ["warm-up", "rolling restart", "after kill"]) {
    assert.ok(of(name).length > 0, `calls during ${name}`);
    assert.deepEqual(of(name).filter((o) => !o.ok), [], `no call fails during ${name}`);
  }
  // During the kill a call may fail, but only with an error that says so, never by hanging.
  for (const o of of("kill").filter((o) => !o.ok)) assert.doesNotMatch(o.detail, /hung for/);
  console.log(`ok${withSessions ? " (sessions in Redis)" : ""}: ${outcomes.length} calls through nginx; a rolling restart of both replicas lost none; a SIGKILL hung none`);
} catch (error) {
  console.error("FAILED:", error);
  failed = true;
} finally {
  running = false;
  await stop();
  redis?.stop();
  fs.rmSync(folder, { recursive: true, force: true });
  process.exit(failed ? 1 : 0);
}
