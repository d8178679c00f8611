// The long-lived side of the real-client oracle: one Node process per Python (pytest worker)
// process runs every check.mjs, chat_loop.mjs, busy_chat.mjs, provider_diff.mjs, agent_loop.mjs, ws_client.mjs
// and sign_approval.mjs request of that process, so Node starts and imports ai 5, 6 and 7 once instead of once per call
// (harness.py is its client).
//
// Protocol, one JSON object per line:
//   stdin:  {id, script: "check.mjs" | "chat_loop.mjs" | ..., input}   input: what the script
//           reads on stdin when run on its own
//   stdout: {id, output} (what the script writes on stdout when run on its own)  or  {id, error}
// Requests run concurrently (a chat loop waits on a live gateway while checks come and go); each
// script's module is imported once, and each request is one call of its `run(input)`, which
// builds its own transports, chats and servers: runs share nothing but the loaded modules (and
// Node's own fetch connection pool, as tabs of one browser do). The process ends when stdin
// closes. An error a run throws is that request's answer; a crash of the process (an uncaught
// exception anywhere) ends it, and the client fails what was pending with the stderr tail.
import { createInterface } from "node:readline";

const SCRIPTS = new Set([
  "check.mjs",
  "chat_loop.mjs",
  "busy_chat.mjs",
  "provider_diff.mjs",
  "agent_loop.mjs",
  "ws_client.mjs",
  "sign_approval.mjs",
]);
const modules = new Map();

function load(script) {
  if (!SCRIPTS.has(script)) return Promise.reject(new Error(`unknown script ${JSON.stringify(script)}`));
  if (!modules.has(script)) modules.set(script, import(new URL(script, import.meta.url).href));
  return modules.get(script);
}

// stdout carries the protocol alone: whatever a library logs goes to stderr.
for (const level of ["log", "info", "debug"]) console[level] = console.error;

function reply(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

async function handle(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    console.error(`oracle: a request line is not JSON (${error}): ${line.slice(0, 200)}`);
    return;
  }
  const { id, script, input } = request;
  try {
    const module = await load(script);
    const output = await module.run(input);
    reply({ id, output });
  } catch (error) {
    reply({ id, error: String(error?.stack ?? error) });
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (line.trim()) handle(line);
});
lines.on("close", () => process.exit(0));
