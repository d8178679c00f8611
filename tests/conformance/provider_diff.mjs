// The AI SDK's own answer for a recorded provider stream: the other side of the differential tests.
//
// For each case, a local HTTP server on 127.0.0.1 answers the provider request with the recorded
// SSE events, and the AI SDK's own provider package (@ai-sdk/anthropic, @ai-sdk/openai Responses,
// @ai-sdk/google) reads it through streamText(); the result's toUIMessageStreamResponse() body is
// what a Node route would send to useChat. Nothing here interprets the stream: the Python side runs
// that body and chunkbridge's through the same real client (check.mjs) and compares the messages.
//
// Input  (stdin): JSON array of cases {id, provider: "anthropic" | "openai" | "google" |
//                 "openai-chat" | "openai-compatible", frames: [SSE data payloads],
//                 tools: [tool names the app declares], providerTools: [{name, factory, args}]:
//                 the provider's own tools (`openai.tools.shell`…) declared under `name`,
//                 messages?: a UIMessage history to send instead of a one-line prompt (through
//                 the AI SDK's convertToModelMessages), providerOptions?}
// Output (stdout): JSON array of {id, body_b64, request: the JSON body the provider sent, error?}
// As a module: `run(cases)` returns that array (oracle.mjs runs it in its long-lived process).
import { createServer } from "node:http";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { convertToModelMessages, jsonSchema, streamText, tool } from "ai7";
import { isMain, readStdinJson } from "./cli.mjs";

const TIMEOUT_MS = 20_000;

function sseBody(provider, frames) {
  return frames
    .map((frame) => {
      if (provider !== "anthropic") return `data: ${frame}\n\n`;
      let type = "message";
      try {
        type = JSON.parse(frame).type ?? type;
      } catch {}
      return `event: ${type}\ndata: ${frame}\n\n`;
    })
    .join("");
}

async function serve(body, requests) {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      requests.push(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

function providerTools(provider, base, declared) {
  const options = { baseURL: base, apiKey: "test-key" };
  const create = { anthropic: createAnthropic, google: createGoogleGenerativeAI }[provider];
  const module = (create ?? createOpenAI)(options);
  return Object.fromEntries(
    (declared ?? []).map(({ name, factory, args }) => [name, module.tools[factory](args ?? {})]),
  );
}

function model(provider, base) {
  const options = { baseURL: base, apiKey: "test-key" };
  if (provider === "anthropic") return createAnthropic(options)("claude-sonnet-4-5");
  if (provider === "openai") return createOpenAI(options).responses("gpt-5");
  if (provider === "openai-chat") return createOpenAI(options).chat("gpt-5");
  if (provider === "openai-compatible") {
    return createOpenAICompatible({ ...options, name: "compatible", includeUsage: true })("model");
  }
  if (provider === "google") return createGoogleGenerativeAI(options)("gemini-2.5-flash");
  throw new Error(`unknown provider ${provider}`);
}

async function runOne(testCase) {
  const requests = [];
  const server = await serve(sseBody(testCase.provider, testCase.frames), requests);
  const { port } = server.address();
  const base = `http://127.0.0.1:${port}/v1${testCase.provider === "google" ? "beta" : ""}`;
  const tools = {
    ...Object.fromEntries(
      (testCase.tools ?? []).map((name) => [
        name,
        tool({ inputSchema: jsonSchema({ type: "object", additionalProperties: true }) }),
      ]),
    ),
    ...providerTools(testCase.provider, base, testCase.providerTools),
  };
  try {
    const prompt = testCase.messages
      ? { messages: await convertToModelMessages(testCase.messages, { tools }) }
      : { prompt: "recorded" };
    const result = streamText({
      model: model(testCase.provider, base),
      ...prompt,
      tools,
      providerOptions: testCase.providerOptions,
      maxRetries: 0,
      abortSignal: AbortSignal.timeout(TIMEOUT_MS),
      onError: () => {},
    });
    const response = result.toUIMessageStreamResponse({
      // as a route does: a history that ends with the assistant message continues it
      originalMessages: testCase.messages,
      sendReasoning: true,
      sendSources: true,
      onError: (error) => (error instanceof Error ? error.message : String(error)),
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    const request = requests.length ? JSON.parse(requests[0]) : null;
    return { id: testCase.id, body_b64: bytes.toString("base64"), request };
  } catch (error) {
    return { id: testCase.id, body_b64: "", error: String(error) };
  } finally {
    server.close();
  }
}

// Each case gets its own provider server, model and tools, closed when it ends.
export async function run(cases) {
  const results = [];
  for (const testCase of cases) results.push(await runOne(testCase));
  return results;
}

if (isMain(import.meta.url)) process.stdout.write(JSON.stringify(await run(await readStdinJson())));
