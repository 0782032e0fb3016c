// A `redis-server` (Debian package) for a test: on a free loopback port, no persistence, in a
// folder of the caller's. `startRedis(folder)` resolves to { url, stop } once it answers PING.
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export const freePort = () =>
  new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

const answers = (port) =>
  new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (data) => (socket.destroy(), resolve(data.toString().startsWith("+PONG"))));
    socket.once("error", () => resolve(false));
  });

export async function startRedis(folder) {
  const binary = fs.existsSync("/usr/bin/redis-server") ? "/usr/bin/redis-server" : "redis-server";
  const port = await freePort();
  const redis = spawn(
    binary,
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", folder],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  let exited = false;
  redis.on("exit", () => (exited = true));
  for (let i = 0; i < 100 && !exited && !(await answers(port)); i++) await sleep(50);
  if (exited || !(await answers(port))) {
    redis.kill("SIGKILL");
    throw new Error(`redis-server (${binary}) did not start on port ${port}`);
  }
  return { url: `redis://127.0.0.1:${port}/0`, stop: () => redis.kill("SIGKILL") };
}
