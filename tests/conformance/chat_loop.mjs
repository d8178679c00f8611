// The human-in-the-loop round trip with the real AI SDK chat (AbstractChat + DefaultChatTransport
// of ai 5, 6 or 7) against a live gateway: send a message, answer what the assistant asks the way
// an app does (addToolOutput for ask_user, addToolApprovalResponse for approvals on 6/7, the
// question form's addToolOutput on 5), let the chat send the continuation, report what it built.
//
// Input (stdin): {api, major, text, answers: [{kind: "question", output} | {kind: "approval",
//   approved, reason?} | {kind: "tool", output}], auto?: bool, apis?: [url], stopAfterChars?: n}
//   kind "tool": the output of the first call of one of the app's tools still waiting for it.
//   auto: the continuation is sent by sendAutomaticallyWhen
//   (lastAssistantMessageIsCompleteWithToolCalls / ...WithApprovalResponses) instead of
//   sendMessage().
//   stopAfterChars: the user presses Stop (chat.stop()) once the answer shows that many
//   characters of text; nothing is answered then.
// Output (stdout): {messages, status, error, requests: [request bodies the chat POSTed]}
// As a module: `run(input)` returns that object (oracle.mjs runs it in its long-lived process).
import * as ai5 from "ai5";
import * as ai6 from "ai6";
import * as ai7 from "ai7";
import { isMain, readStdinJson } from "./cli.mjs";

class State {
  constructor() { this.status = "ready"; this.error = undefined; this.messages = []; }
  pushMessage(m) { this.messages = this.messages.concat(m); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot(thing) { return structuredClone(thing); }
}

// Every call builds its own state, chat, transport and request log.
export async function run(input) {
  const sdk = { 5: ai5, 6: ai6, 7: ai7 }[input.major];

  const requests = [];
  // apis: the n-th request goes to apis[n % apis.length], as a round-robin load balancer sends
  // a chat's requests to several instances of one gateway.
  const recordingFetch = async (url, init) => {
    const target = input.apis ? input.apis[requests.length % input.apis.length] : url;
    requests.push(JSON.parse(init.body));
    return fetch(target, init);
  };

  const state = new State();
  const auto = input.auto
    ? ({ messages }) =>
        (sdk.lastAssistantMessageIsCompleteWithApprovalResponses?.({ messages }) ?? false) ||
        sdk.lastAssistantMessageIsCompleteWithToolCalls({ messages })
    : undefined;
  const chat = new sdk.AbstractChat({
    id: "chat-" + input.major,
    state,
    transport: new sdk.DefaultChatTransport({ api: input.api, fetch: recordingFetch }),
    sendAutomaticallyWhen: auto,
    onError: () => {},
  });

  async function settled(requestCount) {
    for (let i = 0; i < 600; i++) {  // 30 s at most
      if (requests.length >= requestCount && (state.status === "ready" || state.status === "error")) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out waiting for request ${requestCount} (status ${state.status})`);
  }

  // The answer shows n characters of text (30 s at most).
  async function shown(n) {
    for (let i = 0; i < 1500; i++) {
      const last = state.messages.at(-1);
      const parts = last?.role === "assistant" ? last.parts : [];
      const text = parts.filter((p) => p.type === "text").map((p) => p.text).join("");
      if (text.length >= n) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`the answer never showed ${n} characters`);
  }

  function pendingPart(kind) {
    const last = state.messages.at(-1);
    const parts = last?.role === "assistant" ? last.parts : [];
    if (kind === "tool") {
      return parts.find((p) => (p.type.startsWith("tool-") || p.type === "dynamic-tool") &&
        p.state === "input-available" && !p.providerExecuted && p.type !== "tool-ask_user");
    }
    return parts.find((p) => p.state === "approval-requested" ||
      (p.type === "tool-ask_user" && p.state === "input-available"));
  }

  try {
    if (input.stopAfterChars) {
      const sending = chat.sendMessage({ text: input.text });
      await shown(input.stopAfterChars);
      await chat.stop();
      await sending;
      await settled(1);
      return { messages: state.messages, status: state.status, error: state.error?.message ?? null, requests };
    }
    await chat.sendMessage({ text: input.text });
    await settled(1);
    for (const answer of input.answers ?? []) {
      const before = requests.length;
      const part = pendingPart(answer.kind);
      if (!part) throw new Error("nothing to answer: " + JSON.stringify(state.messages.at(-1)));
      if (answer.kind === "tool") {
        const tool = part.toolName ?? part.type.slice("tool-".length);
        await chat.addToolOutput({ tool, toolCallId: part.toolCallId, output: answer.output });
      } else if (answer.kind === "approval" && part.state === "approval-requested") {
        await chat.addToolApprovalResponse({
          id: part.approval.id, approved: answer.approved, reason: answer.reason,
        });
      } else {
        const output = answer.kind === "approval" ? (answer.approved ? "approve" : "deny") : answer.output;
        await chat.addToolOutput({ tool: "ask_user", toolCallId: part.toolCallId, output });
      }
      if (!input.auto) await chat.sendMessage();
      await settled(before + 1);
    }
    return { messages: state.messages, status: state.status, error: state.error?.message ?? null, requests };
  } catch (error) {
    // A run that failed half-way may leave a request in flight: abort it (stop() aborts at once),
    // as the end of the process did when each run had a process of its own.
    chat.stop().catch(() => {});
    throw error;
  }
}

if (isMain(import.meta.url)) {
  process.stdout.write(JSON.stringify(await run(await readStdinJson())));
  process.exit(0);
}
