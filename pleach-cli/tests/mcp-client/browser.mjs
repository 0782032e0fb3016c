// A real browser against `pleach mcp --http --allow-origin`: headless Chromium loads a page served
// on an allowed origin (`http://app.test:PORT`, a name Chromium maps to loopback) whose script
// calls the server with fetch(): an `Authorization` and `Mcp-Protocol-Version` header make each
// call need a CORS preflight. The page reports what it got back to the server that served it. A
// page on an origin that is not allowed (`http://other.test:PORT`) must be stopped by the browser;
// a page on a loopback origin (`http://127.0.0.1:PORT`) is allowed without being named, as the
// server listens on loopback.
// Usage: node browser.mjs PATH/TO/pleach PATH/TO/chromium. Node's standard library only. Exits 1
// on any failure.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";

const [binary, chromium] = process.argv.slice(2);
if (!binary || !chromium) {
  console.error("usage: node browser.mjs PATH/TO/pleach PATH/TO/chromium");
  process.exit(2);
}

const folder = fs.mkdtempSync(path.join(os.tmpdir(), "pleach-browser-"));
const token = "ci-" + Math.random().toString(36).slice(2);
fs.writeFileSync(path.join(folder, "tokens"), `${token}\n`);

// The page: two calls through fetch(), each preceded by a preflight; what came back is posted to
// `/report` on the page's own origin.
const page = (mcpUrl) => `<!doctype html><meta charset="utf-8"><title>pleach</title><script>
(async () => {
  const headers = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "Mcp-Protocol-Version": "2025-11-25",
    "Authorization": "Bearer ${token}",
  };
  const rpc = (id, method, params) => fetch(${JSON.stringify(mcpUrl)}, {
    method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
  });
  let report;
  try {
    const hello = await rpc(1, "initialize", { protocolVersion: "2025-11-25", capabilities: {},
      clientInfo: { name: "browser", version: "1" } });
    const helloBody = await hello.json();
    const called = await rpc(2, "tools/call", { name: "math", arguments: { expression: "6*7" } });
    const calledBody = await called.json();
    report = { ok: true, status: called.status, server: helloBody.result?.serverInfo?.name,
      result: calledBody.result?.structuredContent?.result };
  } catch (error) {
    report = { ok: false, error: String(error) };
  }
  await fetch("/report", { method: "POST", body: JSON.stringify(report) });
})();
</script>`;

// Serves the page (calling the URL `mcpUrlOf` gives when it is asked for) on a free loopback
// port, reached by the browser as `host`: its server, its origin, and its report once the page
// sends it.
const pageServer = async (mcpUrlOf, host) => {
  let deliver;
  const reported = new Promise((resolve) => (deliver = resolve));
  const server = http.createServer((request, response) => {
    if (request.method === "POST" && request.url === "/report") {
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        response.end("thanks");
        deliver(JSON.parse(body));
      });
      return;
    }
    response.setHeader("content-type", "text/html");
    response.end(page(mcpUrlOf()));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://${host}:${server.address().port}`, reported };
};

// The allowed page's server first: its origin is what `--allow-origin` names.
let mcpUrl;
const allowed = await pageServer(() => mcpUrl, "app.test");
const pleach = spawn(
  binary,
  ["mcp", "--http", "127.0.0.1:0", "--token-file", path.join(folder, "tokens"),
    "--allow-origin", allowed.origin],
  { stdio: ["ignore", "ignore", "pipe"] },
);
let log = "";
mcpUrl = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`no URL within 20 s:\n${log}`)), 20000);
  pleach.stderr.on("data", (chunk) => {
    log += chunk;
    const found = /listening on (http:\/\/\S+)\n/.exec(log);
    if (found) {
      clearTimeout(timer);
      resolve(found[1]);
    }
  });
  pleach.on("exit", (code) => reject(new Error(`the server exited (${code}):\n${log}`)));
});

// Loads `url` in headless Chromium until the page reports (20 s at most).
const browse = async (url, reported) => {
  const profile = fs.mkdtempSync(path.join(folder, "profile-"));
  const browser = spawn(
    chromium,
    ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
      "--disable-dev-shm-usage", "--host-resolver-rules=MAP *.test 127.0.0.1",
      `--user-data-dir=${profile}`, url],
    // A process group of its own: its helper processes are killed with it.
    { stdio: ["ignore", "ignore", "pipe"], detached: true },
  );
  const ended = new Promise((resolve) => browser.on("exit", resolve));
  let said = "";
  browser.stderr.on("data", (chunk) => (said += chunk));
  try {
    return await Promise.race([
      reported,
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error(`no report within 20 s; chromium said:\n${said}`)), 20000)),
    ]);
  } finally {
    try {
      process.kill(-browser.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
    await ended;
  }
};

try {
  const good = await browse(`${allowed.origin}/`, allowed.reported);
  assert.deepEqual(good, { ok: true, status: 200, server: "pleach", result: 42 }, JSON.stringify(good));

  const other = await pageServer(() => mcpUrl, "other.test");
  const stopped = await browse(`${other.origin}/`, other.reported);
  assert.equal(stopped.ok, false, `a page of an origin not allowed is stopped: ${JSON.stringify(stopped)}`);
  other.server.close();

  const loopback = await pageServer(() => mcpUrl, "127.0.0.1");
  const local = await browse(`${loopback.origin}/`, loopback.reported);
  assert.deepEqual(local, { ok: true, status: 200, server: "pleach", result: 42 },
    `a page of a loopback origin calls a server on loopback: ${JSON.stringify(local)}`);
  loopback.server.close();
  console.log("browser: pages of the allowed origin and of a loopback origin called the server; another origin's page was stopped");
} catch (error) {
  console.error(`${error.stack ?? error}\n--- pleach mcp --http said:\n${log}`);
  process.exitCode = 1;
} finally {
  allowed.server.close();
  pleach.kill("SIGTERM");
  // Chromium's last helper may still be writing its profile as it dies.
  fs.rmSync(folder, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
}
