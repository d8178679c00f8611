// Drives the AI SDK 7 WebSocketChatTransport (the real one, with the `ws` package as Node 20's
// WebSocket) against the gateway's /chat/ws endpoint and reports what the client built.
//
// Input (stdin): {url, steps: [{action: "send" | "resume", chatId, messages?, stopAfter?,
//   continues?}]}  continues: the assistant message a send continues (the chat builds on it).
//   all steps run on ONE transport (one socket, requests multiplexed when they overlap: steps
//   with "parallel": true start together). stopAfter: abort the request after N chunks.
// Output (stdout): [{chunks, finishReason, errorText, message}] per step.
// As a module: `run(input)` returns that array (oracle.mjs runs it in its long-lived process).
import { WebSocket } from "ws";
import { WebSocketChatTransport, readUIMessageStream } from "ai7";
import { isMain, readStdinJson } from "./cli.mjs";

// Every call opens its own transport (its own socket) and closes it when it ends.
export async function run(input) {
  const transport = new WebSocketChatTransport({ url: input.url, webSocket: WebSocket });

  async function runStep(step) {
    const controller = new AbortController();
    const result = { chunks: 0, finishReason: null, errorText: null, message: null };
    try {
      const stream = step.action === "send"
        ? await transport.sendMessages({
            chatId: step.chatId, messages: step.messages, trigger: "submit-message",
            messageId: undefined, abortSignal: controller.signal,
          })
        : await transport.reconnectToStream({ chatId: step.chatId, abortSignal: controller.signal });
      if (stream == null) return { ...result, noActive: true };
      const tapped = stream.pipeThrough(new TransformStream({
        transform(chunk, c) {
          result.chunks += 1;
          if (chunk.type === "finish") result.finishReason = chunk.finishReason ?? null;
          if (chunk.type === "error") result.errorText = chunk.errorText;
          c.enqueue(chunk);
          if (step.stopAfter && result.chunks >= step.stopAfter) controller.abort();
        },
      }));
      const message = step.continues ? structuredClone(step.continues) : undefined;
      for await (const m of readUIMessageStream({ stream: tapped, message })) result.message = m;
    } catch (error) {
      result.failure = String(error);
    }
    return result;
  }

  try {
    const results = [];
    for (let i = 0; i < input.steps.length; i++) {
      const batch = [input.steps[i]];
      while (input.steps[i + 1]?.parallel) batch.push(input.steps[++i]);
      results.push(...(await Promise.all(batch.map(runStep))));
    }
    // Let queued frames (an abort) reach the server before the socket closes.
    await new Promise((resolve) => setTimeout(resolve, 300));
    return results;
  } finally {
    transport.close?.();
  }
}

if (isMain(import.meta.url)) {
  process.stdout.write(JSON.stringify(await run(await readStdinJson())));
  process.exit(0);
}
