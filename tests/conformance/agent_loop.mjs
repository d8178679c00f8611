// The AI SDK's own agent loop: the other side of the agent-loop differential test.
//
// A local HTTP server on 127.0.0.1 plays the scripted model (the n-th request gets the n-th
// response, as `chunkbridge mock-upstream --sequence` does), @ai-sdk/anthropic reads it through
// streamText() with `stopWhen: stepCountIs(steps)`, and the tools come from the same MCP server
// chunkbridge runs, through the AI SDK's MCP client (@ai-sdk/mcp over Streamable HTTP: over stdio
// it gives a server 1 s to answer its protocol discovery, less than a Python MCP server takes to
// import on a slow machine, and then falls back to a handshake the server refuses). The body of
// toUIMessageStreamResponse() is what a Node route would send to useChat; the Python side runs it
// through the same real client as chunkbridge's and compares the messages.
//
// Input  (stdin): {responses: [[SSE data payloads of one response]], prompt, steps,
//                  mcp_url: the MCP server's Streamable HTTP endpoint}
// Output (stdout): {body_b64, requests: [the JSON bodies the provider sent]}
// As a module: `run(input)` returns that object (oracle.mjs runs it in its long-lived process).
import { createServer } from "node:http";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createMCPClient } from "@ai-sdk/mcp";
import { stepCountIs, streamText } from "ai7";
import { isMain, readStdinJson } from "./cli.mjs";

// Every call runs its own model server and MCP client, both closed when it ends.
export async function run(input) {
  const requests = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      requests.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      const frames = input.responses[Math.min(requests.length, input.responses.length) - 1];
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(frames.map((f) => `event: ${JSON.parse(f).type}\ndata: ${f}\n\n`).join(""));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${server.address().port}/v1`;

  const client = await createMCPClient({ transport: { type: "http", url: input.mcp_url } });
  try {
    const tools = await client.tools();
    const anthropic = createAnthropic({ baseURL: base, apiKey: "test-key" });
    const result = streamText({
      model: anthropic("claude-sonnet-4-5"),
      tools,
      prompt: input.prompt,
      stopWhen: stepCountIs(input.steps),
    });
    const body = Buffer.from(await result.toUIMessageStreamResponse().arrayBuffer());
    return { body_b64: body.toString("base64"), requests };
  } finally {
    await client.close();
    server.close();
  }
}

if (isMain(import.meta.url)) process.stdout.write(JSON.stringify(await run(await readStdinJson())));
