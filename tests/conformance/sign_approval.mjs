// The AI SDK 7 server's own approval signature (ai/internal's signToolApproval, the scheme of
// `experimental_toolApprovalSecret`) for each case: the other side of the approval-signature
// test. Each case's input arrives as JSON and is parsed here, as a JavaScript client holds it.
//
// Input  (stdin): JSON array of {secret, approvalId, toolCallId, toolName, input}
// Output (stdout): JSON array of signatures (base64url), one per case.
import { signToolApproval } from "ai7/internal";
import { isMain, readStdinJson } from "./cli.mjs";

export async function run(cases) {
  return Promise.all(cases.map((testCase) => signToolApproval(testCase)));
}

if (isMain(import.meta.url)) process.stdout.write(JSON.stringify(await run(await readStdinJson())));
