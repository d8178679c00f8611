// Runs SSE bodies through the real AI SDK clients (ai 5, 6 and 7) and reports, per major, whether
// the client would process the whole body, the final UIMessage, the finishReason and any `error`
// chunk. This is the project's oracle: nothing here re-implements the client, it only drives it.
//
// Path exercised per major: DefaultChatTransport.sendMessages() with a fetch that answers the given
// body (the transport's own SSE parser and chunk-schema validation), then readUIMessageStream()
// (the same processUIMessageStream that useChat runs). Like useChat, processing stops at the first
// `error` chunk: that chunk is a legitimate ending (reported as errorText), not a failure.
//
// Input  (stdin): JSON array of cases {id, body | body_b64, majors?: [5,6,7], message?: UIMessage}
//                 `message` is the assistant message being continued (spec §5.4), if any.
//                 Besides the majors' pinned releases, "7.0.69" is the last ai 7 without
//                 `reset-step` (7.0.70 added it; loose schemas since 7.0.32).
// Output (stdout): one JSON array, one entry per case: {id, results: {"5": verdict, ...}}
//   verdict = {ok, fatal?: {name, message}, errorText?, finishReason?, message, chunks}
//
// Usage: node check.mjs < cases.json      or      node check.mjs FILE.sse [FILE.sse ...]
// As a module: `run(cases)` returns that array (oracle.mjs runs it in its long-lived process).
import { readFileSync } from "node:fs";
import { isMain } from "./cli.mjs";

const clients = {
  5: await import("ai5"),
  6: await import("ai6"),
  7: await import("ai7"),
  "7.0.69": await import("ai7-0-69"),
};

function bodyBytes(testCase) {
  if (testCase.body_b64 !== undefined) return Buffer.from(testCase.body_b64, "base64");
  return Buffer.from(testCase.body, "utf8");
}

async function runOne(major, shared) {
  // The client builds on the continued message in place: each major gets its own copy.
  const testCase = shared.message ? { ...shared, message: structuredClone(shared.message) } : shared;
  const { DefaultChatTransport, readUIMessageStream } = clients[major];
  const bytes = bodyBytes(testCase);
  const transport = new DefaultChatTransport({
    api: "http://127.0.0.1/api/chat",
    fetch: async () =>
      new Response(bytes, {
        status: 200,
        headers: { "content-type": "text/event-stream", "x-vercel-ai-ui-message-stream": "v1" },
      }),
  });
  const verdict = { ok: true, chunks: 0 };
  let stream;
  try {
    stream = await transport.sendMessages({
      chatId: "conformance",
      messages: testCase.message ? [testCase.message] : [],
      abortSignal: undefined,
      trigger: "submit-message",
      messageId: undefined,
    });
  } catch (error) {
    return { ok: false, fatal: describe(error), chunks: 0, message: null };
  }
  // Tap: count chunks, remember finishReason, and stop at `error` the way useChat does.
  const tapped = stream.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        verdict.chunks += 1;
        if (chunk.type === "error") {
          verdict.errorText = chunk.errorText;
          controller.terminate();
          return;
        }
        if (chunk.type === "finish" && chunk.finishReason !== undefined) {
          verdict.finishReason = chunk.finishReason;
        }
        controller.enqueue(chunk);
      },
    }),
  );
  let last = testCase.message ?? null;
  try {
    for await (const message of readUIMessageStream({
      stream: tapped,
      message: testCase.message,
      terminateOnError: true,
    })) {
      last = message;
    }
  } catch (error) {
    verdict.ok = false;
    verdict.fatal = describe(error);
  }
  verdict.message = last;
  return verdict;
}

function describe(error) {
  const name = error?.name ?? "Error";
  let message = String(error?.message ?? error);
  if (message.length > 600) message = message.slice(0, 600) + "…";
  return { name, message };
}

// Each case and each major gets its own transport and stream: nothing is kept between calls.
export async function run(cases) {
  const out = [];
  for (const testCase of cases) {
    const results = {};
    for (const major of testCase.majors ?? [5, 6, 7]) {
      results[major] = await runOne(major, testCase);
    }
    out.push({ id: testCase.id, results });
  }
  return out;
}

async function main() {
  const args = process.argv.slice(2);
  let cases;
  if (args.length > 0) {
    cases = args.map((path) => ({ id: path, body_b64: readFileSync(path).toString("base64") }));
  } else {
    cases = JSON.parse(readFileSync(0, "utf8"));
  }
  process.stdout.write(JSON.stringify(await run(cases)) + "\n");
}

if (isMain(import.meta.url)) await main();
