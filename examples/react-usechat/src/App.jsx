// A minimal useChat app pointed at a chunkbridge gateway. The same source builds against
// AI SDK 5 (ai@5, @ai-sdk/react@2) and AI SDK 7 (ai@7, @ai-sdk/react@4): see vite.config.js.
//
// Query parameters: ?session=<id> picks the upstream session, ?api=<gateway base URL> points at
// a gateway on another origin (the gateway then needs --cors-origins for this page's origin),
// ?chat=<id> names the chat and ?resume=1 turns on useChat's resume (a reloaded page picks the
// running answer up again: the gateway's resume setting must be on).
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport } from 'ai';
import { useEffect, useMemo, useState } from 'react';

const params = new URLSearchParams(window.location.search);
const session = params.get('session') || 'demo';
const apiBase = params.get('api') || '';
const chatId = params.get('chat') || `chat-${session}`;
const resume = params.get('resume') === '1';
const api = `${apiBase}/api/sessions/${encodeURIComponent(session)}/chat`;

// Every tool state each tool call went through, in order (the e2e test reads it).
window.__toolStates = window.__toolStates || {};

function ToolPart({ part }) {
  const name = part.type === 'dynamic-tool' ? part.toolName : part.type.slice('tool-'.length);
  useEffect(() => {
    const seen = (window.__toolStates[part.toolCallId] ||= []);
    if (seen[seen.length - 1] !== part.state) seen.push(part.state);
  }, [part.toolCallId, part.state]);
  return (
    <div className="tool" data-testid="tool" data-state={part.state}>
      <span className="tool-name">tool {name}</span> <span className="tool-state">{part.state}</span>
      {part.input !== undefined && <pre className="tool-input">{JSON.stringify(part.input)}</pre>}
      {part.state === 'output-available' && (
        <pre className="tool-output" data-testid="tool-output">{JSON.stringify(part.output)}</pre>
      )}
      {part.state === 'output-error' && <div className="tool-error">{part.errorText}</div>}
    </div>
  );
}

function Part({ part }) {
  if (part.type === 'text') return <div className="text" data-testid="text">{part.text}</div>;
  if (part.type === 'reasoning') return <div className="reasoning">thinking: {part.text}</div>;
  if (part.type === 'dynamic-tool' || part.type.startsWith('tool-')) return <ToolPart part={part} />;
  if (part.type.startsWith('data-')) {
    return <div className="data" data-testid="data">{part.type}: {JSON.stringify(part.data)}</div>;
  }
  return null;
}

export function App() {
  const transport = useMemo(() => new DefaultChatTransport({ api }), []);
  const { messages, sendMessage, status, stop, error } = useChat({ id: chatId, transport, resume });
  // With resume on, the client's stop() only disconnects: ask the gateway to stop the agent
  // (a gateway without resume answers 404, and the disconnect itself aborts).
  const stopAnswer = async () => {
    await fetch(`${api}/${encodeURIComponent(chatId)}/stop`, { method: 'POST' }).catch(() => {});
    stop();
  };
  const [input, setInput] = useState('');
  const [agentStatus, setAgentStatus] = useState('');

  const busy = status === 'submitted' || status === 'streaming';
  return (
    <main>
      <header>
        <h1>useChat × chunkbridge</h1>
        <span className="badge" data-testid="sdk">AI SDK {__AISDK_MAJOR__}</span>
        <span className="badge" data-testid="status">{status}</span>
        {agentStatus && <span className="badge">{agentStatus}</span>}
      </header>
      <section className="messages" data-testid="messages">
        {messages.map((message) => (
          <article key={message.id} className={`message ${message.role}`} data-testid={`message-${message.role}`}>
            {message.parts.map((part, index) => <Part key={index} part={part} />)}
          </article>
        ))}
        {error && <div className="error" data-testid="error">⚠ {error.message}</div>}
      </section>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (!input.trim() || busy) return;
          sendMessage({ text: input });
          setInput('');
        }}
      >
        <input data-testid="input" value={input} onChange={(e) => setInput(e.target.value)} placeholder="Say something…" />
        <button data-testid="send" type="submit" disabled={busy}>Send</button>
        <button data-testid="stop" type="button" onClick={stopAnswer} disabled={!busy}>Stop</button>
      </form>
    </main>
  );
}
