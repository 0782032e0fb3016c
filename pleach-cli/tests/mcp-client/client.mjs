// The real-client MCP test: the official TypeScript SDK's Client against `pleach mcp` on stdio.
// Usage: node client.mjs PATH/TO/pleach   (with @modelcontextprotocol/sdk resolvable: .ci/run
// installs it into a temporary folder and runs this script from there). Exits 1 on any failure.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const binary = process.argv[2];
if (!binary) {
  console.error("usage: node client.mjs PATH/TO/pleach");
  process.exit(2);
}

const transport = new StdioClientTransport({ command: binary, args: ["mcp"], stderr: "inherit" });
const client = new Client({ name: "pleach-ci", version: "1.0.0" });

try {
  await client.connect(transport);
  assert.equal(client.getServerVersion()?.name, "pleach");

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const name of ["math", "unit_convert", "datetime", "fs_write", "shell_exec"]) {
    assert.ok(names.includes(name), `tools/list lacks ${name}: ${names.join(", ")}`);
  }
  const math = tools.find((t) => t.name === "math");
  assert.equal(math.inputSchema.type, "object");
  assert.deepEqual(math.inputSchema.required, ["expression"]);
  assert.equal(math.outputSchema?.type, "object", "math has an object output schema");
  const fsWrite = tools.find((t) => t.name === "fs_write");
  assert.equal(fsWrite.annotations?.destructiveHint, true, "standard tier → destructiveHint");

  // A good call: structuredContent (the SDK checks it against outputSchema) and the text.
  const good = await client.callTool({ name: "math", arguments: { expression: "6*7" } });
  assert.notEqual(good.isError, true, JSON.stringify(good));
  assert.equal(good.structuredContent.result, 42);
  assert.equal(JSON.parse(good.content[0].text).result, 42);

  // Bad arguments: a tool error (isError) carrying the 1xxx code, not a protocol error.
  const bad = await client.callTool({ name: "math", arguments: { expression: 42 } });
  assert.equal(bad.isError, true, JSON.stringify(bad));
  assert.match(bad.content[0].text, /^error 1001: /);

  // Arguments the tool itself refuses: a tool error too.
  const refused = await client.callTool({ name: "math", arguments: { expression: "6*" } });
  assert.equal(refused.isError, true, JSON.stringify(refused));
  assert.match(refused.content[0].text, /^error 1001: /);

  // A tool the server does not list: a protocol error.
  await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }), /unknown tool/);

  console.log(`ok: ${tools.length} tools listed; math 6*7 = 42; bad arguments → ${bad.content[0].text}`);
} catch (error) {
  console.error("FAILED:", error);
  process.exitCode = 1;
} finally {
  await client.close();
}

// Ctrl-C in the client's terminal: this SDK starts the server in the client's process group, so
// the server gets SIGINT too, and the program of a running `shell_exec` (its own process group)
// does not. The server must stop that program as it ends, and end quietly.
const root = fs.mkdtempSync(path.join(os.tmpdir(), "pleach-ci-"));
const interrupted = new StdioClientTransport({
  command: binary,
  args: ["mcp", "--root", root, "--allow-program", "sh", "--timeout", "60s"],
  stderr: "pipe",
});
let errors = "";
interrupted.stderr.on("data", (chunk) => (errors += chunk));
const closed = new Promise((resolve) => (interrupted.onclose = resolve));
const second = new Client({ name: "pleach-ci", version: "1.0.0" });
const alive = (pid) => {
  try {
    return !/^\d+ \(.*\) [ZX]/.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let program;
try {
  await second.connect(interrupted);
  // An image read by fs_read reaches this client as an MCP image block (base64 data and its
  // MIME type, sniffed from the bytes), not as JSON text.
  const png = Buffer.concat([Buffer.from("89504e470d0a1a0a0000000d4948445200000002", "hex"), Buffer.alloc(64, 7)]);
  fs.writeFileSync(path.join(root, "shot.bin"), png);
  const read = await second.callTool({ name: "fs_read", arguments: { path: "shot.bin" } });
  const images = read.content.filter((block) => block.type === "image");
  assert.equal(images.length, 1, JSON.stringify(read));
  assert.equal(images[0].mimeType, "image/png");
  assert.deepEqual(Buffer.from(images[0].data, "base64"), png);
  console.log(`ok: fs_read of a PNG is an image block (${png.length} bytes, byte-identical)`);
  const running = second
    .callTool({ name: "shell_exec", arguments: { program: "sh", args: ["-c", "echo $$ > pid; exec sleep 60"] } })
    .catch(() => {});
  const pidFile = path.join(root, "pid");
  for (let i = 0; i < 500 && !program; i++) {
    program = Number(fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").trim()) || undefined;
    if (!program) await sleep(20);
  }
  assert.ok(program, "the call's program never started");
  process.kill(interrupted.pid, "SIGINT");
  await Promise.race([closed, sleep(5000)]);
  await running;
  for (let i = 0; i < 250 && alive(program); i++) await sleep(20);
  assert.equal(alive(program), false, "the call's program outlived the interrupted server");
  assert.equal(errors, "", "stderr of the interrupted server");
  console.log("ok: Ctrl-C (SIGINT) mid-call stops the call's program; stderr empty");
} catch (error) {
  console.error("FAILED:", error);
  process.exitCode = 1;
  if (program && alive(program)) process.kill(program, "SIGKILL");
} finally {
  await second.close();
  fs.rmSync(root, { recursive: true, force: true });
}
