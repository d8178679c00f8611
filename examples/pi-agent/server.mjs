// A pi agent served over HTTP, to put chunkbridge in front of (no API key needed):
//
//   cd examples/pi-agent && npm install && node server.mjs          # http://127.0.0.1:9200
//   chunkbridge serve --dialect pi-agent --upstream http://127.0.0.1:9200
//
// Each POST takes pi's RPC prompt command ({"type": "prompt", "message": "..."}) and answers with
// the agent's events (agent.subscribe) as server-sent events; a client that goes away aborts the
// run. The model is pi-ai's faux provider with scripted answers; give the Agent a real model
// (getModel("anthropic", "claude-sonnet-4-5") and an API key) to use one.
import { createServer } from "node:http";
import { Agent } from "@mariozechner/pi-agent-core";
import { Type, fauxAssistantMessage, fauxThinking, fauxToolCall, registerFauxProvider } from "@mariozechner/pi-ai";

const faux = registerFauxProvider({ tokensPerSecond: 200 });

function answer(context) {
  const last = context.messages[context.messages.length - 1];
  if (last.role === "toolResult") return fauxAssistantMessage(`The clock says ${last.content[0].text}.`);
  const text = typeof last.content === "string" ? last.content : last.content.map((c) => c.text ?? "").join("");
  if (text.toLowerCase().includes("time")) {
    return fauxAssistantMessage([fauxThinking("I will look at the clock."), fauxToolCall("clock", {})], { stopReason: "toolUse" });
  }
  return fauxAssistantMessage(`You said: ${text}. Ask me for the time to see a tool run.`);
}

const clock = {
  name: "clock",
  label: "Clock",
  description: "The current time",
  parameters: Type.Object({}),
  async execute() {
    return { content: [{ type: "text", text: new Date().toISOString() }], details: {} };
  },
};

createServer(async (req, res) => {
  let body = "";
  for await (const chunk of req) body += chunk;
  const command = JSON.parse(body || "{}");
  faux.setResponses([answer, answer, answer]);
  const agent = new Agent({ initialState: { model: faux.getModel(), systemPrompt: "", tools: [clock] } });
  res.writeHead(200, { "content-type": "text/event-stream" });
  agent.subscribe((event) => res.write(`data: ${JSON.stringify(event)}\n\n`));
  res.on("close", () => agent.abort());
  await agent.prompt(command.message ?? "");
  res.end();
}).listen(Number(process.env.PORT ?? 9200), "127.0.0.1", () => console.log("pi agent on http://127.0.0.1:9200"));
