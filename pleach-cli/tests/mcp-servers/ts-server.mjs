// A remote MCP server for pleach's MCP *client* tests: the official TypeScript SDK's McpServer
// (high-level API, zod schemas) over stdio or Streamable HTTP (sessions, one transport and one
// McpServer per session, as the SDK's own examples do).
// Usage: node ts-server.mjs stdio
//        node ts-server.mjs http PORT [--token TOKEN]
//   (with @modelcontextprotocol/sdk resolvable: CI copies this script into a temporary folder
//   where the SDK is npm-installed.) HTTP binds 127.0.0.1; PORT 0 picks a free port; once
//   listening it prints exactly one stderr line `ts-server: listening on http://127.0.0.1:PORT/mcp`.
//   With --token, a request without `Authorization: Bearer TOKEN` gets 401.
// Env MCP_CALL_LOG=FILE: one JSON line appended per event, `{"call":TOOL,"arguments":{...}}` first
// thing in every tool handler (so a call refused by the SDK's schema check is never logged), and
// `{"cancelled":TOOL}` when a call is aborted; `echo` also logs the request's `_meta`
// (`{"call":"echo","arguments":{...},"meta":{...}}`), where a caller's W3C trace context travels.
// Env MCP_ECHO_DESCRIPTION_FILE=FILE: `echo`'s description is the file's text (trimmed), read when
// a server starts (each HTTP session) and again whenever the file changes (polled every 100 ms):
// every session's `echo` then takes the new text and the SDK sends
// notifications/tools/list_changed (a server changing a definition under its client).
// Tools:
//   echo {text: string}          text content `text`; readOnlyHint true.
//   add {a: number, b: number}   structuredContent {sum: a+b}, outputSchema {sum: number}, text
//                                content the JSON of it; readOnlyHint true.
//   fail {reason: string}        isError true, text content `reason`.
//   slow {ms: integer}           waits ms then text `slept MS`; with a progressToken, a
//                                notifications/progress every 100 ms (progress N, message `tick N`);
//                                aborted (notifications/cancelled): logs {"cancelled":"slow"}, no answer.
//   delete_file {path: string}   text `deleted PATH`, touches nothing; destructiveHint true,
//                                readOnlyHint false, idempotentHint true.
//   add_tool {}                  registers tool `late` (no params, text `late`) if absent, so the SDK
//                                sends notifications/tools/list_changed (over HTTP only on the
//                                session's GET SSE stream, if the client opened one); text `added`.
// Tools that talk to the client during the call (the server declares `logging`); each sends on
// the call's own stream (the SDK's `extra.sendNotification`/`sendRequest`: over HTTP, the call's
// SSE stream):
//   chatter {}                   notifications/message at info (logger `ts`, data {step: 1}) and
//                                warning (data `careful`); with a progressToken, progress 1 and 2
//                                of total 2 (messages `half`, `done`); then, 50 ms later, text
//                                `chatted`.
//   ask {tag: string}            elicitation/create (form: message `Name for TAG?`, schema {name:
//                                string, default "Ada"}, required [name]); text: the JSON of the
//                                client's result, or `error CODE: MESSAGE` when it refuses.
//   sample {}                    sampling/createMessage (user text `Name a colour.`, systemPrompt
//                                `One word.`, maxTokens 5); text as for `ask`.
// Arguments that fail a schema never reach a handler: the SDK answers an isError result
// "Input validation error: ...".
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import * as z from "zod/v4";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  isInitializeRequest,
} from "@modelcontextprotocol/sdk/types.js";

const usage = "usage: node ts-server.mjs stdio | node ts-server.mjs http PORT [--token TOKEN]";

const callLog = process.env.MCP_CALL_LOG;
function log(event) {
  if (callLog) fs.appendFileSync(callLog, JSON.stringify(event) + "\n");
}

const text = (value) => ({ content: [{ type: "text", text: value }] });

const descriptionFile = process.env.MCP_ECHO_DESCRIPTION_FILE;
const echoDescription = () =>
  descriptionFile ? fs.readFileSync(descriptionFile, "utf8").trim() : "Returns its text.";
const echoes = new Set(); // every server's `echo`, updated when the description file changes
if (descriptionFile) {
  fs.watchFile(descriptionFile, { interval: 100 }, () => {
    const description = echoDescription();
    for (const echo of echoes) echo.update({ description });
  });
}

// One McpServer with every tool; HTTP makes one per session, so `late` is per session.
function makeServer() {
  const server = new McpServer({ name: "ts-server", version: "1.0.0" }, { capabilities: { logging: {} } });

  /** The client's answer to `request`, sent on the call's stream, as the tool's text. */
  const asked = async (extra, request, schema) => {
    try {
      return text(JSON.stringify(await extra.sendRequest(request, schema)));
    } catch (error) {
      return text(`error ${error.code}: ${error.message}`);
    }
  };

  server.registerTool("chatter", { description: "Logs twice and reports progress.", inputSchema: {} }, async (args, extra) => {
    log({ call: "chatter", arguments: args });
    const note = (params) => extra.sendNotification({ method: "notifications/message", params });
    await note({ level: "info", logger: "ts", data: { step: 1 } });
    await note({ level: "warning", data: "careful" });
    const token = extra._meta?.progressToken;
    if (token !== undefined) {
      for (const [progress, message] of [[1, "half"], [2, "done"]]) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress, total: 2, message },
        });
      }
    }
    // The SDK's client handles a notification a tick after it reads it but a response at once,
    // dropping the progress of a request already answered: the result waits a little.
    await new Promise((resolve) => setTimeout(resolve, 50));
    return text("chatted");
  });

  server.registerTool(
    "ask",
    { description: "Asks the user for a name.", inputSchema: { tag: z.string() }, annotations: { readOnlyHint: true } },
    async (args, extra) => {
      log({ call: "ask", arguments: args });
      const requestedSchema = {
        type: "object",
        properties: { name: { type: "string", default: "Ada" } },
        required: ["name"],
      };
      const params = { mode: "form", message: `Name for ${args.tag}?`, requestedSchema };
      return asked(extra, { method: "elicitation/create", params }, ElicitResultSchema);
    },
  );

  server.registerTool("sample", { description: "Asks the client's model to name a colour.", inputSchema: {} }, async (args, extra) => {
    log({ call: "sample", arguments: args });
    const params = {
      messages: [{ role: "user", content: { type: "text", text: "Name a colour." } }],
      systemPrompt: "One word.",
      maxTokens: 5,
    };
    return asked(extra, { method: "sampling/createMessage", params }, CreateMessageResultSchema);
  });

  const echo = server.registerTool(
    "echo",
    { description: echoDescription(), inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } },
    async (args, extra) => {
      log({ call: "echo", arguments: args, meta: extra._meta ?? {} });
      return text(args.text);
    },
  );
  echoes.add(echo);

  server.registerTool(
    "add",
    {
      description: "Adds two numbers.",
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
      annotations: { readOnlyHint: true },
    },
    async (args) => {
      log({ call: "add", arguments: args });
      const structuredContent = { sum: args.a + args.b };
      return { content: [{ type: "text", text: JSON.stringify(structuredContent) }], structuredContent };
    },
  );

  server.registerTool(
    "fail",
    { description: "Always fails with the given reason.", inputSchema: { reason: z.string() } },
    async (args) => {
      log({ call: "fail", arguments: args });
      return { ...text(args.reason), isError: true };
    },
  );

  server.registerTool(
    "slow",
    {
      description: "Sleeps ms milliseconds, reporting progress every 100 ms; cancellable.",
      inputSchema: { ms: z.number().int() },
    },
    async (args, extra) => {
      log({ call: "slow", arguments: args });
      const token = extra._meta?.progressToken;
      const finished = await new Promise((resolve) => {
        let ticks = 0;
        const ticker =
          token === undefined
            ? undefined
            : setInterval(() => {
                ticks += 1;
                extra
                  .sendNotification({
                    method: "notifications/progress",
                    params: { progressToken: token, progress: ticks, message: `tick ${ticks}` },
                  })
                  .catch(() => {});
              }, 100);
        const done = (value) => {
          clearTimeout(timer);
          if (ticker) clearInterval(ticker);
          extra.signal.removeEventListener("abort", onAbort);
          resolve(value);
        };
        const onAbort = () => done(false);
        const timer = setTimeout(() => done(true), args.ms);
        if (extra.signal.aborted) onAbort();
        else extra.signal.addEventListener("abort", onAbort);
      });
      if (!finished) {
        log({ cancelled: "slow" });
        // The SDK sends no response for an aborted request; this result goes nowhere.
        return text("cancelled");
      }
      return text(`slept ${args.ms}`);
    },
  );

  server.registerTool(
    "delete_file",
    {
      description: "Pretends to delete a file (touches nothing).",
      inputSchema: { path: z.string() },
      annotations: { destructiveHint: true, readOnlyHint: false, idempotentHint: true },
    },
    async (args) => {
      log({ call: "delete_file", arguments: args });
      return text(`deleted ${args.path}`);
    },
  );

  let late;
  server.registerTool(
    "add_tool",
    { description: "Adds the tool `late` (the server then sends tools/list_changed).", inputSchema: {} },
    async (args) => {
      log({ call: "add_tool", arguments: args });
      if (!late) {
        late = server.registerTool("late", { description: "Added by add_tool.", inputSchema: {} }, async (lateArgs) => {
          log({ call: "late", arguments: lateArgs });
          return text("late");
        });
      }
      return text("added");
    },
  );

  return server;
}

async function serveStdio() {
  await makeServer().connect(new StdioServerTransport());
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function jsonError(res, status, code, message) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

async function serveHttp(port, token) {
  const sessions = new Map(); // session id -> transport

  const httpServer = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url, "http://127.0.0.1");
      if (url.pathname !== "/mcp") {
        res.writeHead(404).end("not found");
        return;
      }
      if (token !== undefined && req.headers.authorization !== `Bearer ${token}`) {
        res.writeHead(401, { "content-type": "application/json", "www-authenticate": "Bearer" });
        res.end(JSON.stringify({ error: "unauthorized" }));
        return;
      }
      const sessionId = req.headers["mcp-session-id"];
      let body;
      if (req.method === "POST") {
        const raw = await readBody(req);
        try {
          body = JSON.parse(raw);
        } catch {
          jsonError(res, 400, -32700, "Parse error");
          return;
        }
      }
      const existing = sessionId ? sessions.get(sessionId) : undefined;
      if (existing) {
        await existing.handleRequest(req, res, body);
        return;
      }
      if (sessionId) {
        jsonError(res, 404, -32001, "Session not found");
        return;
      }
      if (req.method === "POST" && isInitializeRequest(body)) {
        const transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => sessions.set(id, transport),
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await makeServer().connect(transport);
        await transport.handleRequest(req, res, body);
        return;
      }
      jsonError(res, 400, -32000, "Bad Request: No valid session ID provided");
    } catch (error) {
      console.error("ts-server: error handling request:", error);
      if (!res.headersSent) jsonError(res, 500, -32603, "Internal server error");
    }
  });

  httpServer.listen(port, "127.0.0.1", () => {
    console.error(`ts-server: listening on http://127.0.0.1:${httpServer.address().port}/mcp`);
  });
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === "stdio" && rest.length === 0) {
  await serveStdio();
} else if (mode === "http" && (rest.length === 1 || (rest.length === 3 && rest[1] === "--token"))) {
  const port = Number(rest[0]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(usage);
    process.exit(2);
  }
  await serveHttp(port, rest.length === 3 ? rest[2] : undefined);
} else {
  console.error(usage);
  process.exit(2);
}
