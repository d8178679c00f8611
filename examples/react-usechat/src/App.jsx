// A minimal useChat app pointed at a chunkbridge gateway. The same source builds against
// AI SDK 5 (ai@5, @ai-sdk/react@2) and AI SDK 7 (ai@7, @ai-sdk/react@4): see vite.config.js.
//
// Query parameters: ?session=<id> picks the upstream session, ?api=<gateway base URL> points at
// a gateway on another origin (the gateway then needs --cors-origins for this page's origin),
// ?chat=<id> names the chat and ?resume=1 turns on useChat's resume (a reloaded page picks the
// running answer up again: the gateway's resume setting must be on). ?stored=1 is for a gateway
// that keeps chats (store = sqlite or postgres): the page loads the chat from it on mount and sends
// only its last message (the server's copy is the history), so a reload shows the whole
// conversation; with ?resume=1 as well, an answer still running is followed to its end.
// ?endpoint=<chat URL> is the chat's URL itself, in place of ?api's gateway session route: a route
// of your own app, e.g. examples/fastapi-app's /api/openai/chat or its mounted gateway's
// /chat/sessions/<id>/chat (the stored chat and Stop's request are under it, as on a gateway).
//
// The human in the loop: an agent's question is a client-side tool call `ask_user` (its input has
// the question and options): answered with addToolOutput. A tool approval (ai 6/7) is a tool part
// in state approval-requested: answered with addToolApprovalResponse. ai 5 has no approvals and
// gets the question form instead (an ask_user with options approve/deny). Either way the chat
// sends the continuation itself (sendAutomaticallyWhen) and the agent goes on in the same message.
import { useChat } from '@ai-sdk/react';
import * as ai from 'ai';
import { createContext, useContext, useEffect, useMemo, useState } from 'react';

const { DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls } = ai;
// ai 6/7 only (undefined on ai 5, whose approvals arrive as questions).
const completeWithApprovals = ai['lastAssistantMessageIsCompleteWithApprovalResponses'];
const sendAutomaticallyWhen = (options) =>
  lastAssistantMessageIsCompleteWithToolCalls(options) ||
  (completeWithApprovals ? completeWithApprovals(options) : false);
const Answers = createContext(null);

const params = new URLSearchParams(window.location.search);
const session = params.get('session') || 'demo';
const apiBase = params.get('api') || '';
const chatId = params.get('chat') || `chat-${session}`;
const resume = params.get('resume') === '1';
const stored = params.get('stored') === '1';
const api = params.get('endpoint') || `${apiBase}/api/sessions/${encodeURIComponent(session)}/chat`;

// The gateway keeps the conversation: send only the newest message ({id, message}), plus what
// names a continuation or a regenerate.
const sendLastMessage = ({ id, messages, trigger, messageId, body }) => ({
  body: { ...body, id, message: messages[messages.length - 1], trigger, messageId },
});

// The stored chat, as UIMessage[] for useChat({ messages }) ([] for a new chat).
async function loadChat() {
  const response = await fetch(`${api}/${encodeURIComponent(chatId)}/messages`);
  if (!response.ok) throw new Error(`loading the chat failed: ${response.status} ${await response.text()}`);
  return response.json();
}

// Every tool state each tool call went through, in order (the e2e test reads it).
window.__toolStates = window.__toolStates || {};

function ToolPart({ part }) {
  const name = part.type === 'dynamic-tool' ? part.toolName : part.type.slice('tool-'.length);
  useEffect(() => {
    const seen = (window.__toolStates[part.toolCallId] ||= []);
    if (seen[seen.length - 1] !== part.state) seen.push(part.state);
  }, [part.toolCallId, part.state]);
  if (name === 'ask_user') return <Question part={part} />;
  return (
    <div className="tool" data-testid="tool" data-name={name} data-state={part.state}>
      <span className="tool-name">tool {name}</span> <span className="tool-state">{part.state}</span>
      {part.input !== undefined && <pre className="tool-input">{JSON.stringify(part.input)}</pre>}
      {part.state === 'approval-requested' && <Approval part={part} />}
      {part.state === 'output-available' && (
        <pre className="tool-output" data-testid="tool-output">{JSON.stringify(part.output)}</pre>
      )}
      {part.state === 'output-error' && <div className="tool-error">{part.errorText}</div>}
    </div>
  );
}

function Question({ part }) {
  const { addToolOutput } = useContext(Answers);
  const [text, setText] = useState('');
  const input = part.input || {};
  const answer = (output) => addToolOutput({ tool: 'ask_user', toolCallId: part.toolCallId, output });
  if (part.state !== 'input-available') {
    const answered = part.state === 'output-available' ? JSON.stringify(part.output) : part.errorText;
    return (
      <div className="question" data-testid="question" data-state={part.state}>
        <span className="question-text">{input.question}</span> → <b data-testid="answered">{answered}</b>
      </div>
    );
  }
  return (
    <div className="question" data-testid="question" data-state={part.state}>
      <div className="question-text">{input.question}</div>
      {(input.options || []).map((option) => (
        <button key={option} type="button" data-testid="answer-option" onClick={() => answer(option)}>
          {option}
        </button>
      ))}
      <form onSubmit={(event) => { event.preventDefault(); if (text.trim()) answer(text); }}>
        <input data-testid="answer-input" value={text} onChange={(e) => setText(e.target.value)} placeholder="Your answer…" />
        <button data-testid="answer-send" type="submit">Answer</button>
      </form>
    </div>
  );
}

function Approval({ part }) {
  const { addToolApprovalResponse } = useContext(Answers);
  const decide = (approved) => addToolApprovalResponse({ id: part.approval.id, approved });
  return (
    <div className="approval" data-testid="approval">
      <div>{part.approval.requestReason || 'Allow this tool to run?'}</div>
      <button type="button" data-testid="approve" onClick={() => decide(true)}>Approve</button>
      <button type="button" data-testid="deny" onClick={() => decide(false)}>Deny</button>
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

// useChat reads `messages` once, when the chat is created: render it after the load.
export function App() {
  const [loaded, setLoaded] = useState(stored ? null : []);
  const [loadError, setLoadError] = useState(null);
  useEffect(() => {
    if (stored) loadChat().then(setLoaded, (e) => setLoadError(String(e.message || e)));
  }, []);
  if (loadError) return <main><div className="error" data-testid="error">⚠ {loadError}</div></main>;
  if (loaded === null) return <main><span className="badge" data-testid="loading">loading…</span></main>;
  return <Chat initialMessages={loaded} />;
}

function Chat({ initialMessages }) {
  const transport = useMemo(
    () => new DefaultChatTransport(stored ? { api, prepareSendMessagesRequest: sendLastMessage } : { api }),
    [],
  );
  const { messages, sendMessage, status, stop, error, addToolOutput, addToolApprovalResponse } =
    useChat({ id: chatId, messages: initialMessages, transport, resume, sendAutomaticallyWhen });
  const answers = useMemo(
    () => ({ addToolOutput, addToolApprovalResponse }),
    [addToolOutput, addToolApprovalResponse],
  );
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
      <Answers.Provider value={answers}>
      <section className="messages" data-testid="messages">
        {messages.map((message) => (
          <article key={message.id} className={`message ${message.role}`} data-testid={`message-${message.role}`}>
            {message.parts.map((part, index) => <Part key={index} part={part} />)}
          </article>
        ))}
        {error && <div className="error" data-testid="error">⚠ {error.message}</div>}
      </section>
      </Answers.Provider>
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
