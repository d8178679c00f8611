// What the conformance scripts share as command-line programs: each exports `run(input)` for the
// long-lived oracle (oracle.mjs) and, run directly, reads its input the way it always has.
import { realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";

// True when the module at `url` is the script Node was started with (not imported by another).
export function isMain(url) {
  if (!process.argv[1]) return false;
  try {
    return url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

// The whole of stdin as one JSON value.
export async function readStdinJson() {
  let data = "";
  process.stdin.setEncoding("utf8");
  for await (const chunk of process.stdin) data += chunk;
  return JSON.parse(data);
}
