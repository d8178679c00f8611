// The useChat app's scenarios (src/App.jsx, one build against its gateway), each in the browser
// context it is given, filling `seen` with what it observed (tests/test_e2e_browser.py asserts
// on it). The demo agent paces its answers: "slow" ones stream 8 times slower (~16 s), so the
// scenarios that follow one to its end set the length of the whole run.
import { POLL, isChatPost, isResumeGet, painted, requestEnd, starting, upstreamTurnEnded } from './waits.mjs';

// Installed in each page before the app's own scripts: what the scenarios read and wait on, and
// every length the newest answer had as it rendered, with its time (an answer must render word
// by word, not all at once).
export function probe() {
  const answers = () => [...document.querySelectorAll('[data-testid="message-assistant"]')];
  window.__answerTexts = () =>
    answers().map((m) => [...m.querySelectorAll('[data-testid="text"]')].map((e) => e.textContent).join(''));
  window.__lastAnswer = () => window.__answerTexts().at(-1) ?? '';
  window.__status = () => document.querySelector('[data-testid="status"]')?.textContent;
  window.__lengths = [];
  new MutationObserver(() => {
    const length = window.__lastAnswer().length;
    if (window.__lengths.at(-1)?.length !== length) window.__lengths.push({ at: performance.now(), length });
  }).observe(document, { childList: true, subtree: true, characterData: true });
}

const lastAnswer = (page) => page.evaluate(() => window.__lastAnswer());
const status = (page) => page.evaluate(() => window.__status());
const assistants = (page) => page.getByTestId('message-assistant').count();

// Until the newest answer shows at least `length` characters (the middle of a slow one).
const answerReaches = (page, length, answers = 1) => page.waitForFunction(
  ([length, answers]) => window.__answerTexts().length >= answers && window.__lastAnswer().length >= length,
  [length, answers],
  POLL,
);

// Until the app is idle again: status ready, or error.
const settled = (page) => page.waitForFunction(() => ['ready', 'error'].includes(window.__status()), null, POLL);

async function send(page, text) {
  await page.getByTestId('input').fill(text);
  await page.getByTestId('send').click();
}

// Does `action` (a send, an answer that continues the agent) and waits until the turn it starts
// is over: its POST's response read to the end, then the app idle.
async function turn(page, action) {
  const over = requestEnd(page, isChatPost);
  await action();
  await over;
  await settled(page);
}

// Reloads the page and waits until it has picked up the chat again: the resumed answer's GET read
// to its end (a running answer is followed to its end), then the app idle.
async function reload(page) {
  const resumed = requestEnd(page, isResumeGet);
  await page.reload();
  await resumed;
  await settled(page);
}

const conversation = async (page) => ({
  userTexts: await page.getByTestId('message-user').allTextContents(),
  assistantTexts: await page.evaluate(() => window.__answerTexts()),
  status: await status(page),
});

// The option of the question the agent asks now (the ai 5 build gets approvals as questions too).
const option = (page, text) => page
  .locator('[data-testid="question"][data-state="input-available"] [data-testid="answer-option"]')
  .filter({ hasText: text });

export function useChatScenarios({ build, appUrl, api }, artifacts) {
  const shot = (page, suffix) =>
    page.screenshot({ path: `${artifacts}/react-usechat-${build}${suffix}.png`, fullPage: true });

  // A page of the app on a new session (`kind` names it in the gateway's logs), and what the
  // scenario does first with it (`start`), as one of the run's starts (waits.mjs: starting).
  async function open(context, seen, kind, extra = '', start = async () => {}) {
    seen.session = `e2e-${kind}-${build}-${Date.now()}`;
    await context.addInitScript(probe);
    return starting(async () => {
      const page = await context.newPage();
      await page.goto(`${appUrl}?session=${encodeURIComponent(seen.session)}&api=${encodeURIComponent(api)}${extra}`);
      await page.getByTestId('input').waitFor();
      await start(page);
      return page;
    });
  }

  return {
    // a full turn (progressive text, the tool part's states, its result), then a follow-up
    async chat(context, seen) {
      const page = await open(context, seen, 'chat');
      seen.sdk = await page.getByTestId('sdk').textContent();
      await turn(page, () => send(page, 'Explain chunkbridge'));
      const rendered = (await page.evaluate(() => window.__lengths)).filter((l) => l.length > 0);
      seen.firstTurn = {
        distinctLengths: new Set(rendered.map((l) => l.length)).size,
        renderedOverMs: rendered.length ? rendered.at(-1).at - rendered[0].at : 0,
        text: await lastAnswer(page),
        toolStates: await page.evaluate(() => window.__toolStates),
        toolOutput: await page.getByTestId('tool-output').first().textContent(),
        status: await status(page),
      };
      await turn(page, () => send(page, 'And a follow-up question'));
      seen.secondTurn = {
        users: await page.getByTestId('message-user').count(),
        assistants: await assistants(page),
        userTexts: await page.getByTestId('message-user').allTextContents(),
        lastText: await lastAnswer(page),
        status: await status(page),
      };
      await shot(page, '');
    },

    // Stop in the middle of a slow answer; then, once the upstream's turn is over and the
    // browser's stream closed, the text is still what it was at Stop
    async stop(context, seen) {
      const page = await open(context, seen, 'stop');
      const streamEnd = requestEnd(page, isChatPost);
      await send(page, 'slow answer please');
      await answerReaches(page, 20);
      await page.getByTestId('stop').click();
      const stoppedAt = Date.now();
      await settled(page);
      seen.readyAfterMs = Date.now() - stoppedAt;
      seen.status = await status(page);
      seen.textAtStop = (await lastAnswer(page)).length;
      await streamEnd;
      await upstreamTurnEnded(api, seen.session);
      await painted(page);
      seen.textLater = (await lastAnswer(page)).length;
    },

    // an upstream error shows the app's error state with the upstream's message
    async error(context, seen) {
      const page = await open(context, seen, 'error');
      await send(page, 'please fail now');
      await page.getByTestId('error').waitFor();
      seen.text = await page.getByTestId('error').textContent();
      seen.status = await status(page);
    },

    // with resume on, a reload in the middle of an answer picks it up and completes it
    async resume(context, seen) {
      const page = await open(context, seen, 'resume', '&resume=1', (page) => send(page, 'slow answer please'));
      await answerReaches(page, 20);
      seen.beforeReload = (await lastAnswer(page)).length;
      await reload(page);
      seen.text = await lastAnswer(page);
      seen.status = await status(page);
      seen.assistants = await assistants(page);
      await shot(page, '-resumed');
    },

    // a chat the gateway keeps (store = sqlite): a reload mid-answer shows the conversation and
    // follows the answer to its end; a reload at the end shows all of it, a question's included
    async stored(context, seen) {
      const page = await open(context, seen, 'stored', '&resume=1&stored=1', async (page) => {
        await turn(page, () => send(page, 'Explain chunkbridge'));
        await send(page, 'slow answer please');
      });
      await answerReaches(page, 20, 2);
      const beforeReload = (await lastAnswer(page)).length;
      await reload(page);
      seen.mid = { ...(await conversation(page)), beforeReload };
      await shot(page, '-reload-mid');
      await turn(page, () => send(page, 'ask me'));
      await turn(page, () => option(page, 'green').click());
      await page.getByText('You chose').waitFor();
      seen.live = await conversation(page);
      await reload(page);
      seen.end = { ...(await conversation(page)), answered: await page.getByTestId('answered').allTextContents() };
      await shot(page, '-reload-end');
    },

    // the human in the loop: a question, answered in the page; the agent goes on in the same message
    async question(context, seen) {
      const page = await open(context, seen, 'ask');
      await turn(page, () => send(page, 'ask me'));
      await page.locator('[data-testid="question"][data-state="input-available"]').waitFor();
      seen.asked = await page.locator('.question-text').first().textContent();
      await shot(page, '-question-asked');
      await turn(page, () => option(page, 'green').click());
      await page.getByText('You chose').waitFor();
      seen.text = await lastAnswer(page);
      seen.assistants = await assistants(page);
      seen.answered = await page.getByTestId('answered').first().textContent();
      seen.status = await status(page);
      await shot(page, '-question');
    },

    // an approval approved, then one denied (ai 7: real tool approvals; ai 5: the question form)
    async approval(context, seen) {
      const page = await open(context, seen, 'approval');
      const decide = async (prompt, approved) => {
        const before = await assistants(page);
        await turn(page, () => send(page, prompt));
        const choice = build === 'ai7'
          ? page.getByTestId(approved ? 'approve' : 'deny')
          : option(page, approved ? 'approve' : 'deny');
        await choice.waitFor();
        if (approved) await shot(page, '-approval-requested');
        await turn(page, () => choice.click());
        await page.getByText(approved ? 'Done: the branch is deleted.' : 'I left the branch alone').first().waitFor();
        const tool = page.locator('[data-testid="tool"][data-name="delete_branch"]').nth(before);
        return { state: await tool.getAttribute('data-state'), text: await lastAnswer(page) };
      };
      seen.approved = await decide('please approve a cleanup', true);
      seen.denied = await decide('approve one more cleanup', false);
      seen.assistants = await assistants(page);
      seen.toolStates = await page.evaluate(() => window.__toolStates);
      seen.status = await status(page);
      await shot(page, '-approval');
    },
  };
}
