// The gateway's own demo page (gateway/devtools/static/demo.html, `make demo`), each scenario in
// the browser context it is given, filling `seen` with what it observed (tests/test_e2e_browser.py
// asserts on it): the dialect demo answers a question and an approval as the useChat app does,
// the agent demo (`make demo AGENT=1 TELEMETRY=1`) shows its gateway-run tools and their trace.
import { POLL, armed, isChatPost, isResumeGet, requestEnd, starting } from './waits.mjs';

const status = (page) => page.textContent('#status');

// A new chat on the demo page, once its start-up is over (the GET that would resume a running
// answer; 204: none), so what the scenario sends is the only thing in flight.
async function open(context, api) {
  return starting(async () => {
    const page = await context.newPage();
    await page.setViewportSize({ width: 1400, height: 900 });
    const restored = requestEnd(page, isResumeGet);
    await page.goto(`${api}/`);
    await restored;
    return page;
  });
}

// Until the page is done with its stream: the status it writes when one ends replaces
// "streaming…" (once the request is over, the page has written "streaming…" already).
const streamDone = (page) =>
  page.waitForFunction(() => !document.querySelector('#status').textContent.startsWith('streaming'), null, POLL);

// Does `action` (a send, a click that answers) and waits until the turn it starts is over.
async function turn(page, action) {
  const over = requestEnd(page, isChatPost);
  await action();
  await over;
  await streamDone(page);
}

async function send(page, text) {
  await page.fill('#input', text);
  await page.click('#send');
}

// The dialect demo: a question answered, an approval approved, then the page reloaded (the chat
// comes back from the gateway's store).
export function demoPage({ build, api }, artifacts) {
  const shot = (page, suffix) => page.screenshot({ path: `${artifacts}/react-usechat-${build}${suffix}.png` });
  return async (context, seen) => {
    const page = await open(context, api);
    await turn(page, () => send(page, 'ask me'));
    await turn(page, () => page.click('button[data-answer][data-value="blue"]'));
    await page.locator('#chat').getByText('You chose **blue**: a fine choice.').waitFor();
    await turn(page, () => send(page, 'approve'));
    const approve = build === 'ai7' ? 'button[data-approve][data-value="yes"]' : 'button[data-answer][data-value="approve"]';
    await turn(page, () => page.click(approve));
    await page.locator('#chat').getByText('Done: the branch is deleted.').waitFor();
    seen.live = { messages: await page.locator('#chat .msg').count(), status: await status(page) };
    await shot(page, '-demo-page');
    const restored = requestEnd(page, isResumeGet);
    await page.reload();
    await restored;
    await streamDone(page);
    seen.reloaded = {
      messages: await page.locator('#chat .msg').count(),
      texts: await page.locator('#chat .msg').allTextContents(),
    };
    await shot(page, '-demo-page-reloaded');
  };
}

// The trace panel as the page draws it last for its next chat POST (whose traceparent names the
// trace): once the turn is over, the page fetches the trace three times as the last spans come
// in, drawing each answer. Set up before the POST is sent, so that no fetch goes unseen.
async function finalTrace(page) {
  let path = null;
  let fetched = 0;
  const third = armed(page.waitForResponse((r) => new URL(r.url()).pathname === path && ++fetched === 3));
  const posted = await page.waitForRequest(isChatPost);
  path = `/demo/traces/${posted.headers().traceparent.split('-')[1]}`;
  const { spans } = await (await third).json();
  await page.waitForFunction((count) => document.querySelectorAll('#trace .span').length === count, spans.length, POLL);
  return page.locator('#trace .span .n').allTextContents();
}

// The agent demo: a question that takes two tool steps (and its trace), then a note that asks
// for approval, approved with the page's button.
export function agentDemo({ api }, artifacts) {
  return async (context, seen) => {
    const page = await open(context, api);
    seen.header = await page.textContent('header');
    const trace = armed(finalTrace(page));
    await turn(page, () => send(page, 'what is (2 + 3) × 4?'));
    await page.locator('#chat').getByText('Done in 2 tool call(s)').waitFor();
    seen.tools = await page.locator('#chat .tool').allTextContents();
    // each tool's icon, as drawn: an inline SVG (no emoji font needed), its size on the page
    seen.toolIcons = await page.locator('#chat .tool').evaluateAll((tools) =>
      tools.map((tool) => {
        const icon = tool.firstElementChild;
        const box = icon?.getBoundingClientRect();
        return { tag: icon?.tagName ?? null, width: box?.width ?? 0, height: box?.height ?? 0 };
      }),
    );
    seen.trace = await trace;
    await page.screenshot({ path: `${artifacts}/demo-agent-trace.png` });
    await turn(page, () => send(page, 'note: buy milk'));
    await turn(page, () => page.click('button[data-approve][data-value="yes"]'));
    await page.locator('#chat').getByText('note 1 saved').first().waitFor();
    seen.status = await status(page);
    seen.texts = await page.locator('#chat .msg').allTextContents();
    await page.screenshot({ path: `${artifacts}/demo-agent.png` });
  };
}

// `make demo BUSY=queue`: a second message sent while a slow answer streams waits its turn (the
// page shows its place in the line, then clears it when it runs), and both answers come in order.
export function busyDemo({ api }, artifacts) {
  const assistantText = (n) => document.querySelectorAll('#chat .msg.assistant')[n]?.textContent ?? '';
  return async (context, seen) => {
    const page = await open(context, api);
    seen.header = await page.textContent('header');
    seen.session = new URL(page.url()).searchParams.get('session');
    await send(page, 'slow answer please');
    await page.waitForFunction((n) => (document.querySelectorAll('#chat .msg.assistant')[n]?.textContent ?? '').includes('What chunkbridge does'), 0, POLL);  // the first answer streams
    seen.sendEnabled = await page.isEnabled('#send');
    await send(page, 'And a second one');  // (a disabled Send would time the click out)
    await page.locator('#chat .waiting').waitFor();
    seen.waiting = await page.locator('#chat .msg').evaluateAll((msgs) =>
      msgs.map((m) => m.querySelector('.waiting')?.textContent ?? null));
    seen.firstWhileWaiting = await page.evaluate(assistantText, 0);
    await page.screenshot({ path: `${artifacts}/demo-busy-waiting.png` });
    // the second answer runs: its first words are on the page, the waiting sign is gone
    const running = await page.waitForFunction(() => {
      const second = document.querySelectorAll('#chat .msg.assistant')[1]?.textContent ?? '';
      return second.includes('You said') && {
        waiting: document.querySelectorAll('#chat .waiting').length,
        first: document.querySelectorAll('#chat .msg.assistant')[0].textContent,
      };
    }, null, POLL);
    seen.secondRunning = await running.jsonValue();
    await streamDone(page);
    seen.status = await status(page);
    seen.roles = await page.locator('#chat .msg').evaluateAll((msgs) => msgs.map((m) => m.className));
    seen.texts = await page.locator('#chat .msg').allTextContents();
    await page.screenshot({ path: `${artifacts}/demo-busy.png` });
  };
}
