// `deploy/replicas.sh` as a child process of a test: its lines echoed and awaited, its commands
// sent. `startReplicas(script, binary, flags)` gives { child, expectLine, command, stop }.
import { spawn } from "node:child_process";
import readline from "node:readline";

export function startReplicas(script, binary, flags) {
  const child = spawn("bash", [script, binary, "2", "--", ...flags], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = readline.createInterface({ input: child.stdout });
  const waiting = [];
  lines.on("line", (line) => {
    console.log(`  [replicas] ${line}`);
    const index = waiting.findIndex((w) => w.prefix.test(line));
    if (index >= 0) waiting.splice(index, 1)[0].resolve(line);
  });
  // The next line matching `prefix`, within `ms`.
  const expectLine = (prefix, ms = 60000) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no line matching ${prefix} within ${ms} ms`)), ms);
      waiting.push({ prefix, resolve: (line) => (clearTimeout(timer), resolve(line)) });
    });
  // Sends `text` (`restart 0`, `kill 1`) and waits for its `done` line.
  const command = async (text) => {
    const done = expectLine(new RegExp(`^done ${text}$`));
    child.stdin.write(`${text}\n`);
    return done;
  };
  // Quits the script (it stops the replicas and nginx); kills it if it is not gone in 10 s.
  const stop = async () => {
    child.stdin.end("quit\n");
    const exited = new Promise((resolve) => child.on("exit", resolve));
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10000))]);
    child.kill("SIGKILL");
  };
  return { child, expectLine, command, stop };
}
