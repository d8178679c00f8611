// A real pi agent upstream for the pi-agent tests: pi-agent-core's Agent with pi-ai's faux
// provider (scripted answers, no network), served over HTTP on 127.0.0.1. Each POST takes the
// RPC prompt command ({type: "prompt", message}) and answers with the agent's events as SSE, as a
// server forwarding `agent.subscribe` does; a client that goes away aborts the agent.
//
// The answer depends on a word of the prompt: "weather" (thinking, a tool the agent runs, with a
// progress update, then an answer), "broken" (the tool fails), "fail" (the model call fails),
// "long" (a slow answer, for aborts), anything else (plain text); with "slow" ("very slow": 3 s) the weather tool
// takes a while (time for a steer to arrive while it runs).
//
// The same port also takes WebSocket connections, as pi's RPC mode over a socket: one Agent per
// socket, the commands `prompt`, `steer` (Agent.steer: delivered after the running assistant
// turn's whole tool batch, before the next model call) and `abort`, each event one text frame.
//
// Usage: PORT=0 node pi_upstream.mjs   → prints "pi upstream: http://127.0.0.1:<port>"
import { createServer } from "node:http";
import { WebSocketServer } from "ws";
import { Agent } from "@mariozechner/pi-agent-core";
import {
  Type,
  fauxAssistantMessage,
  fauxText,
  fauxThinking,
  fauxToolCall,
  registerFauxProvider,
} from "@mariozechner/pi-ai";

const faux = registerFauxProvider({ tokensPerSecond: 20000, models: [{ id: "faux-1", reasoning: true }] });

function promptText(message) {
  if (typeof message.content === "string") return message.content;
  return message.content.map((c) => c.text ?? "").join("");
}

function respond(context) {
  const messages = context.messages;
  const last = messages[messages.length - 1];
  if (last.role === "toolResult") {
    return fauxAssistantMessage(`Done: ${last.content.map((c) => c.text).join("")}.`);
  }
  const text = promptText(last);
  if (text.includes("weather") || text.includes("broken")) {
    const tool = text.includes("broken") ? "broken_tool" : "get_weather";
    const city = text.includes("very slow") ? "very slow" : text.includes("slow") ? "slow" : "Paris";
    return fauxAssistantMessage(
      [fauxThinking("The user wants the weather."), fauxToolCall(tool, { city }, { id: "call_1" })],
      { stopReason: "toolUse" },
    );
  }
  if (text.includes("fail")) return fauxAssistantMessage("", { stopReason: "error", errorMessage: "the model is down" });
  if (text.includes("long")) return fauxAssistantMessage(fauxText("word ".repeat(2000)));
  return fauxAssistantMessage(`You said: ${text}`);
}

const tools = [
  {
    name: "get_weather",
    label: "Weather",
    description: "The weather in a city",
    parameters: Type.Object({ city: Type.String() }),
    async execute(id, params, signal, onUpdate) {
      onUpdate?.({ content: [{ type: "text", text: "looking it up" }], details: {} });
      if (params.city === "slow") await new Promise((resolve) => setTimeout(resolve, 400));
      if (params.city === "very slow") await new Promise((resolve) => setTimeout(resolve, 3000));
      return { content: [{ type: "text", text: `sunny in ${params.city}` }], details: { celsius: 21 } };
    },
  },
  {
    name: "broken_tool",
    label: "Broken",
    description: "Always fails",
    parameters: Type.Object({ city: Type.String() }),
    async execute() {
      throw new Error("the weather service is unreachable");
    },
  },
];

// GET /stats: how many runs ended because their client went away or sent `abort` (the abort
// tests read it), and how many `abort` commands came.
const stats = { runs: 0, aborted: 0 };

const server = createServer(async (req, res) => {
  if (req.method === "GET") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(stats));
    return;
  }
  let body = "";
  for await (const chunk of req) body += chunk;
  let command;
  try {
    command = JSON.parse(body);
  } catch {
    res.writeHead(400).end("not JSON");
    return;
  }
  faux.setResponses([respond, respond, respond, respond]);
  const agent = new Agent({
    initialState: { model: faux.getModel(), systemPrompt: "You are a test agent.", tools },
    getApiKey: () => "faux",
  });
  res.writeHead(200, { "content-type": "text/event-stream" });
  agent.subscribe((event) => {
    res.write(`data: ${JSON.stringify(event)}\n\n`);
  });
  let finished = false;
  res.on("close", () => {
    if (!finished) {
      stats.aborted += 1;
      agent.abort();
    }
  });
  stats.runs += 1;
  await agent.prompt(command.message ?? "");
  finished = true;
  res.end();
});
function userMessage(text) {
  return { role: "user", content: [{ type: "text", text }], timestamp: Date.now() };
}

// pi's RPC mode over a WebSocket: a socket that closes aborts its agent.
new WebSocketServer({ server }).on("connection", (socket) => {
  const agent = new Agent({
    initialState: { model: faux.getModel(), systemPrompt: "You are a test agent.", tools },
    getApiKey: () => "faux",
  });
  let running = false;
  const stop = () => {
    if (running) stats.aborted += 1;
    running = false;
    agent.abort();
  };
  agent.subscribe((event) => socket.send(JSON.stringify(event)));
  socket.on("close", stop);
  socket.on("message", async (data) => {
    let command;
    try {
      command = JSON.parse(String(data));
    } catch {
      socket.send(JSON.stringify({ type: "response", success: false, error: "not JSON" }));
      return;
    }
    if (command.type === "prompt") {
      faux.setResponses([respond, respond, respond, respond, respond, respond]);
      stats.runs += 1;
      running = true;
      try {
        await agent.prompt(command.message ?? "");
      } catch (error) {
        socket.send(JSON.stringify({ type: "response", command: "prompt", success: false, error: String(error) }));
      }
      running = false;
    } else if (command.type === "steer") {
      agent.steer(userMessage(command.message ?? ""));
    } else if (command.type === "abort") {
      stats.abortFrames = (stats.abortFrames ?? 0) + 1;
      stop();
    }
  });
});

server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  console.log(`pi upstream: http://127.0.0.1:${server.address().port}`);
});
setTimeout(() => process.exit(0), Number(process.env.MAX_LIFETIME_S ?? 300) * 1000).unref();
