// The Node reference of the agent-loop benchmark: the AI SDK's own loop as its docs show a Node
// route — convertToModelMessages → streamText({ model, tools, stopWhen: stepCountIs(5) }) →
// pipeUIMessageStreamToResponse — with @ai-sdk/anthropic reading the scripted model
// (provider.py) and the tools from the MCP server (tools_server.py) through @ai-sdk/mcp's
// Streamable HTTP client, connected once at start-up as chunkbridge connects its servers.
//
// Env: PORT, UPSTREAM_HTTP (the scripted model), MCP_URL. node_modules: a link to
// tests/conformance/node_modules (run.py makes it), for ai 7, @ai-sdk/anthropic, @ai-sdk/mcp.
import http from "node:http";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createMCPClient } from "@ai-sdk/mcp";
import { convertToModelMessages, stepCountIs, streamText } from "ai7";

const PORT = Number(process.env.PORT);
const model = createAnthropic({ baseURL: `${process.env.UPSTREAM_HTTP}/v1`, apiKey: "bench" })(
  "claude-sonnet-4-5",
);
const client = await createMCPClient({ transport: { type: "http", url: process.env.MCP_URL } });
const tools = await client.tools();

const server = http.createServer(async (req, res) => {
  const parts = [];
  for await (const chunk of req) parts.push(chunk);
  const body = JSON.parse(Buffer.concat(parts).toString("utf8"));
  const abort = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) abort.abort();
  });
  const result = streamText({
    model,
    messages: await convertToModelMessages(body.messages ?? []),
    tools,
    stopWhen: stepCountIs(5),
    abortSignal: abort.signal,
  });
  result.pipeUIMessageStreamToResponse(res);
});
server.listen({ port: PORT, host: "127.0.0.1", backlog: 4096 }, () => {
  console.error(`node loop listening on ${PORT}`);
});
const shutdown = async () => {
  server.close();
  await client.close();
  process.exit(0);
};
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
