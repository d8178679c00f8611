// Drives the React example (both builds) in Debian's headless Chromium against examples/fastapi-app:
// one FastAPI process serving the built app (/app/ai5/, /app/ai7/) and its chat routes, each page
// pointed at one with ?endpoint=. Prints what each build saw, as JSON; the pytest test
// (tests/test_e2e_fastapi_app.py) starts the app and its scripted provider and asserts on it:
//
//   {"ai5": {"openai": {…}, "stop": {…}, "agent": {…}, "graph": {…}, "gateway": {…},
//            "reloaded": {…}, "pageErrors": [], "failure"?: "…"}, "ai7": {…}}
//
//   node e2e/fastapi_app.mjs '{"origin": "http://127.0.0.1:<port>", "session": "<gateway session>",
//     "artifacts": "dir for screenshots"}'
//
// The builds run one after the other, one page each: the app's OpenAI route and its gateway share
// one scripted provider, which answers requests in the order they come.
import { chromium } from 'playwright-core';
import { probe } from './usechat.mjs';
import { POLL, requestEnd } from './waits.mjs';

const { origin, session, artifacts } = JSON.parse(process.argv[2]);
const BUILDS = ['ai5', 'ai7'];

const isPost = (path) => (request) =>
  request.method() === 'POST' && new URL(request.url()).pathname === path;
const lastAnswer = (page) => page.evaluate(() => window.__lastAnswer());
const status = (page) => page.evaluate(() => window.__status());
const settled = (page) => page.waitForFunction(() => ['ready', 'error'].includes(window.__status()), null, POLL);

// Every tool part the page shows: its name, state, input and output (as the page prints them).
const tools = (page) => page.$$eval('[data-testid="tool"]', (parts) => parts.map((part) => ({
  name: part.dataset.name,
  state: part.dataset.state,
  input: part.querySelector('.tool-input')?.textContent ?? null,
  output: part.querySelector('[data-testid="tool-output"]')?.textContent ?? null,
})));

async function send(page, text) {
  await page.getByTestId('input').fill(text);
  await page.getByTestId('send').click();
}

// Until the gateway's store has the chat's answer (its writes come behind the turn).
async function stored(url, timeout = 15_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const messages = await (await fetch(url)).json();
    if (messages.at(-1)?.role === 'assistant') return;
    if (Date.now() > deadline) throw new Error(`${url} has no answer after ${timeout} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function drive(browser, build, seen) {
  const context = await browser.newContext({ viewport: { width: 900, height: 1000 } });
  context.on('weberror', (error) => seen.pageErrors.push(String(error.error())));
  await context.addInitScript(probe);
  const page = await context.newPage();
  const shot = (name) => page.screenshot({ path: `${artifacts}/fastapi-app-${build}-${name}.png`, fullPage: true });
  const open = async (endpoint, chat, extra = '') => {
    const query = `?endpoint=${encodeURIComponent(endpoint)}&chat=${chat}-${build}${extra}`;
    await page.goto(`${origin}/app/${build}/index.html${query}`);
    await page.getByTestId('input').waitFor();
  };
  // Sends `text` and waits until its POST is read to the end and the page is idle again.
  const turn = async (endpoint, text) => {
    const over = requestEnd(page, isPost(endpoint));
    await send(page, text);
    await over;
    await settled(page);
    return { text: await lastAnswer(page), status: await status(page), tools: await tools(page) };
  };

  try {
    // The OpenAI SDK route: an answer; then Stop while the next one streams (the provider has
    // sent "Hello" and holds the stream open).
    await open('/api/openai/chat', 'openai');
    seen.sdk = await page.getByTestId('sdk').textContent();
    seen.openai = await turn('/api/openai/chat', 'Say hello');
    const stopped = requestEnd(page, isPost('/api/openai/chat'));
    await send(page, 'Say hello again');
    await page.waitForFunction(() => window.__answerTexts().length >= 2 && window.__lastAnswer().length > 0, null, POLL);
    seen.stop = { stoppedAt: Date.now() };
    await page.getByTestId('stop').click();
    await settled(page);
    seen.stop.readyAfterMs = Date.now() - seen.stop.stoppedAt;
    seen.stop.requestFailure = await stopped;
    seen.stop.status = await status(page);
    seen.stop.text = await lastAnswer(page);
    seen.stop.errors = await page.getByTestId('error').count();
    await shot('openai');

    await open('/api/agent/chat', 'agent');
    seen.agent = await turn('/api/agent/chat', 'Roll a die');
    await shot('agent');

    await open('/api/graph/chat', 'graph');
    seen.graph = await turn('/api/graph/chat', 'Hello graph');

    // The mounted gateway, its chat kept (?stored=1: the page sends its newest message only and
    // loads the chat from the store); reloaded once the store has the answer.
    const endpoint = `/chat/sessions/${session}/chat`;
    await open(endpoint, 'gateway', '&stored=1');
    seen.gateway = await turn(endpoint, 'What is (2 + 3) × 4?');
    seen.gateway.chat = `gateway-${build}`;
    await stored(`${origin}${endpoint}/gateway-${build}/messages`);
    await page.reload();
    await page.getByTestId('message-assistant').first().waitFor();
    seen.reloaded = {
      userTexts: await page.getByTestId('message-user').allTextContents(),
      text: await lastAnswer(page),
      tools: await tools(page),
    };
    await shot('gateway');
  } catch (error) {
    seen.failure = String(error?.stack || error);
  } finally {
    await context.close();
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const seen = {};
  for (const build of BUILDS) {
    seen[build] = { pageErrors: [] };
    await drive(browser, build, seen[build]);
  }
  console.log(JSON.stringify(seen));
} finally {
  await browser.close();
}
