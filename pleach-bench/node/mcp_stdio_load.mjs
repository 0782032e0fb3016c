// `mcp-stdio` under the official TypeScript SDK's client: N tools/call with INFLIGHT in flight
// against a stdio server started by StdioClientTransport (Node connects the child's stdin and
// stdout through Unix socketpairs, not pipes). Prints calls/s; the server's user and system CPU
// per call over the timed calls only, from /proc/PID/stat before and after them (10 ms ticks);
// and the client's own CPU per call over the same calls (process.cpuUsage()).
//
// Usage, with @modelcontextprotocol/sdk resolvable (docs/performance.md, "`mcp-stdio`"):
//   node mcp_stdio_load.mjs LABEL N INFLIGHT TOOL ARGS_JSON -- COMMAND [ARGS...]
import fs from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [label, n, inflight, tool, argsJson, separator, command, ...args] = process.argv.slice(2);
if (separator !== "--" || !command) {
  console.error("usage: node mcp_stdio_load.mjs LABEL N INFLIGHT TOOL ARGS_JSON -- COMMAND [ARGS...]");
  process.exit(2);
}
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client({ name: "mcp-stdio-load", version: "1.0.0" });
await client.connect(transport);
const pid = transport.pid;
const toolArgs = JSON.parse(argsJson);
const ticksPerSecond = 100; // USER_HZ on Linux: `getconf CLK_TCK`

// Fields 14 and 15 of /proc/PID/stat, counted after the command name's closing parenthesis.
const cpuTicks = () => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return [Number(fields[11]), Number(fields[12])];
};
const check = (result) => {
  if (result.isError || result.content?.[0]?.text === undefined) {
    throw new Error(`unexpected result: ${JSON.stringify(result)}`);
  }
};

try {
  check(await client.callTool({ name: tool, arguments: toolArgs })); // one call before the clock
  const total = Number(n);
  let started = 0;
  const [user0, system0] = cpuTicks();
  const client0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const worker = async () => {
    while (started < total) {
      started++;
      check(await client.callTool({ name: tool, arguments: toolArgs }));
    }
  };
  await Promise.all(Array.from({ length: Number(inflight) }, worker));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const [user1, system1] = cpuTicks();
  const clientCpu = process.cpuUsage(client0);
  const perCall = (ticks) => ((ticks * 1e6) / ticksPerSecond / total).toFixed(1);
  console.log(
    `${label} calls=${total} cps=${(total / seconds).toFixed(0)} ` +
      `user_us=${perCall(user1 - user0)} sys_us=${perCall(system1 - system0)} ` +
      `client_user_us=${(clientCpu.user / total).toFixed(1)} ` +
      `client_sys_us=${(clientCpu.system / total).toFixed(1)}`,
  );
} finally {
  await client.close();
}
