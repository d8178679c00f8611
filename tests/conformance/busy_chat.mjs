// A user who sends while the answer streams, with the real AI SDK chat (AbstractChat +
// DefaultChatTransport of ai 5, 6 or 7) against a live gateway: send texts[0], and once its
// answer streams, the other texts `gapMs` apart without waiting (what a chat box lets the user
// do); report what the chat built and what the gateway sent.
//
// Input (stdin): {api, apis?, major, chatId, texts: [string], gapMs, queue?: bool,
//   sendNow?: bool, stopRoute?: bool, afterChars?: number}
//   apis: the n-th request goes to apis[n % apis.length] (instances behind a load balancer).
//   queue: ai 7's experimental_queue (the chat sends one message at a time, after each answer).
//   sendNow: with queue, experimental_sendQueuedMessageNow(the first queued message) once the
//     others are queued (stop, then send it).
//   stopRoute: an aborted request also POSTs {api}/{chatId}/stop (what an app with resume on
//     does for its Stop button, here done by its fetch).
//   afterChars: the second text goes once the answer shows this many characters (default 1).
// Output (stdout): {messages, status, error, requests: [{body, status, at}], bodies: [base64],
//   errors: [string]}
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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function drain(stream, into) {
  const reader = stream.getReader();
  const pieces = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      pieces.push(value);
    }
  } catch {
    // the chat aborted it: what came is what it saw
  }
  into.push(...pieces);
}

export async function run(input) {
  const sdk = { 5: ai5, 6: ai6, 7: ai7 }[input.major];
  const started = Date.now();
  const requests = [];
  const bodies = [];
  const drains = [];
  const base = input.apis ? input.apis : [input.api];

  const recordingFetch = async (url, init) => {
    const index = requests.length;
    const target = base[index % base.length];
    const entry = { body: JSON.parse(init.body), status: 0, at: Date.now() - started };
    requests.push(entry);
    if (input.stopRoute && init.signal) {
      init.signal.addEventListener("abort", () => {
        fetch(`${target}/${encodeURIComponent(input.chatId)}/stop`, { method: "POST" }).catch(() => {});
      });
    }
    const response = await fetch(target, init);
    entry.status = response.status;
    if (!response.body) return response;
    const [mine, copy] = response.body.tee();
    const pieces = [];
    bodies[index] = pieces;
    drains.push(drain(copy, pieces));
    return new Response(mine, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  const state = new State();
  const errors = [];
  const chat = new sdk.AbstractChat({
    id: input.chatId,
    state,
    transport: new sdk.DefaultChatTransport({ api: base[0], fetch: recordingFetch }),
    experimental_queue: Boolean(input.queue),
    onError: (error) => errors.push(String(error?.message ?? error)),
  });

  const assistantChars = () =>
    state.messages
      .filter((m) => m.role === "assistant")
      .flatMap((m) => m.parts)
      .filter((p) => p.type === "text")
      .reduce((n, p) => n + p.text.length, 0);

  const sends = [chat.sendMessage({ text: input.texts[0] })];
  for (let i = 0; i < 600 && assistantChars() < (input.afterChars ?? 1); i++) await sleep(10);
  for (const text of input.texts.slice(1)) {
    sends.push(chat.sendMessage({ text }));
    await sleep(input.gapMs ?? 100);
  }
  if (input.sendNow) {
    const [first] = chat.experimental_queuedMessages;
    if (first) sends.push(chat.experimental_sendQueuedMessageNow(first.id));
  }
  await Promise.all(sends);
  // the queue sends its next message after each answer: until every text has its request and
  // the chat is idle (30 s at most)
  for (let i = 0; i < 600; i++) {
    const idle = state.status === "ready" || state.status === "error";
    const queued = chat.experimental_queuedMessages?.length ?? 0;
    if (idle && queued === 0 && requests.every((r) => r.status !== 0)) {
      await sleep(50);
      if (state.status === "ready" || state.status === "error") break;
    }
    await sleep(50);
  }
  await Promise.all(drains);
  const encoded = bodies.map((pieces) =>
    Buffer.concat((pieces ?? []).map((p) => Buffer.from(p))).toString("base64"),
  );
  return {
    messages: state.messages,
    status: state.status,
    error: state.error?.message ?? null,
    requests,
    bodies: encoded,
    errors,
  };
}

if (isMain(import.meta.url)) {
  process.stdout.write(JSON.stringify(await run(await readStdinJson())));
  process.exit(0);
}
