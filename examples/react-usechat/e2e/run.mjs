// Drives the built useChat app in Debian's headless Chromium (playwright-core, no browser
// download) against a running chunkbridge gateway, and prints what it observed as JSON.
// The pytest test (tests/test_e2e_browser.py) starts the servers and asserts on the result.
//
//   node e2e/run.mjs '{"appUrl": "...", "api": "...", "build": "ai5", "screenshot": "out.png"}'
import { chromium } from 'playwright-core';

const config = JSON.parse(process.argv[2]);
const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const result = { build: config.build };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function open(session, extra = '') {
  const page = await browser.newPage({ viewport: { width: 900, height: 1000 } });
  page.on('pageerror', (e) => (result.pageErrors ||= []).push(String(e)));
  const url = `${config.appUrl}?session=${encodeURIComponent(session)}&api=${encodeURIComponent(config.api)}${extra}`;
  await page.goto(url);
  await page.getByTestId('input').waitFor();
  return page;
}

async function send(page, text) {
  await page.getByTestId('input').fill(text);
  await page.getByTestId('send').click();
}

const status = (page) => page.getByTestId('status').textContent();
const lastAssistantText = (page) => page.evaluate(() => {
  const all = document.querySelectorAll('[data-testid="message-assistant"]');
  const last = all[all.length - 1];
  return last ? [...last.querySelectorAll('[data-testid="text"]')].map((e) => e.textContent).join('') : '';
});

async function waitReady(page, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  const lengths = [];
  for (;;) {
    lengths.push((await lastAssistantText(page)).length);
    const s = await status(page);
    if ((s === 'ready' || s === 'error') && lengths.length > 1) return lengths;
    if (Date.now() > deadline) throw new Error(`still ${s} after ${timeoutMs} ms`);
    await sleep(40);
  }
}

try {
  // 1. a full turn: progressive text, the tool part's states, the result
  const session = `e2e-${config.build}-${Date.now()}`;
  const page = await open(session);
  result.sdk = await page.getByTestId('sdk').textContent();
  await send(page, 'Explain chunkbridge');
  const lengths = await waitReady(page);
  result.firstTurn = {
    distinctLengths: new Set(lengths.filter((n) => n > 0)).size,
    text: await lastAssistantText(page),
    toolStates: await page.evaluate(() => window.__toolStates),
    toolOutput: await page.getByTestId('tool-output').first().textContent(),
    status: await status(page),
  };
  // 2. a second message in the same chat
  await send(page, 'And a follow-up question');
  await waitReady(page);
  result.secondTurn = {
    users: await page.getByTestId('message-user').count(),
    assistants: await page.getByTestId('message-assistant').count(),
    userTexts: await page.getByTestId('message-user').allTextContents(),
    lastText: await lastAssistantText(page),
    status: await status(page),
  };
  await page.screenshot({ path: config.screenshot, fullPage: true });
  result.screenshot = config.screenshot;

  // 3. Stop in the middle of a slow answer
  const stopSession = `e2e-stop-${config.build}-${Date.now()}`;
  const stopPage = await open(stopSession);
  await send(stopPage, 'slow answer please');
  const stopDeadline = Date.now() + 15000;
  while ((await lastAssistantText(stopPage)).length < 20 && Date.now() < stopDeadline) await sleep(30);
  await stopPage.getByTestId('stop').click();
  const stoppedAt = Date.now();
  while ((await status(stopPage)) !== 'ready' && Date.now() - stoppedAt < 5000) await sleep(30);
  result.stop = { status: await status(stopPage), readyAfterMs: Date.now() - stoppedAt,
    textAtStop: (await lastAssistantText(stopPage)).length };
  await sleep(1500);
  result.stop.textLater = (await lastAssistantText(stopPage)).length;
  result.stop.session = stopSession;

  // 4. an upstream error shows the app's error state with the upstream's message
  const errorPage = await open(`e2e-error-${config.build}-${Date.now()}`);
  await send(errorPage, 'please fail now');
  await errorPage.getByTestId('error').waitFor({ timeout: 15000 });
  result.error = { text: await errorPage.getByTestId('error').textContent(), status: await status(errorPage) };

  // 5. with resume on: a reload in the middle of an answer picks it up and completes it
  const resumeSession = `e2e-resume-${config.build}-${Date.now()}`;
  const resumePage = await open(resumeSession, '&resume=1');
  await send(resumePage, 'slow answer please');
  const resumeDeadline = Date.now() + 15000;
  while ((await lastAssistantText(resumePage)).length < 20 && Date.now() < resumeDeadline) await sleep(30);
  const beforeReload = (await lastAssistantText(resumePage)).length;
  await resumePage.reload();
  await resumePage.getByTestId('input').waitFor();
  let resumedText = '';
  const settleDeadline = Date.now() + 30000;
  for (;;) {
    resumedText = await lastAssistantText(resumePage);
    if (resumedText.length > beforeReload && (await status(resumePage)) === 'ready') break;
    if (Date.now() > settleDeadline) break;
    await sleep(50);
  }
  result.resume = { session: resumeSession, beforeReload, text: resumedText, status: await status(resumePage),
    assistants: await resumePage.getByTestId('message-assistant').count() };
  await resumePage.screenshot({ path: config.screenshot.replace('.png', '-resumed.png'), fullPage: true });

  // 6. a chat the gateway keeps (store = sqlite): a reload mid-answer shows the conversation and
  // follows the answer to its end; a reload at the end shows all of it, a question's included
  const storedSession = `e2e-stored-${config.build}-${Date.now()}`;
  const storedPage = await open(storedSession, '&resume=1&stored=1');
  const conversation = async (page) => ({
    userTexts: await page.getByTestId('message-user').allTextContents(),
    assistantTexts: await page.evaluate(() => [...document.querySelectorAll('[data-testid="message-assistant"]')]
      .map((m) => [...m.querySelectorAll('[data-testid="text"]')].map((e) => e.textContent).join(''))),
    status: await status(page),
  });
  const reloaded = async (page, settled) => {
    await page.reload();
    await page.getByTestId('input').waitFor({ timeout: 15000 });
    const deadline = Date.now() + 30000;
    while (!(await settled(page)) && Date.now() < deadline) await sleep(50);
    return conversation(page);
  };
  await send(storedPage, 'Explain chunkbridge');
  await waitReady(storedPage);
  await send(storedPage, 'slow answer please');
  const midDeadline = Date.now() + 15000;
  while (((await storedPage.getByTestId('message-assistant').count()) < 2
    || (await lastAssistantText(storedPage)).length < 20) && Date.now() < midDeadline) await sleep(30);
  const storedBefore = (await lastAssistantText(storedPage)).length;
  result.storedMid = await reloaded(storedPage, async (page) => (await status(page)) === 'ready'
    && (await page.getByTestId('message-assistant').count()) === 2
    && (await lastAssistantText(page)).length > storedBefore);
  result.storedMid.beforeReload = storedBefore;
  await storedPage.screenshot({ path: config.screenshot.replace('.png', '-reload-mid.png'), fullPage: true });
  await send(storedPage, 'ask me');
  await storedPage.getByTestId('answer-option').filter({ hasText: 'green' }).click({ timeout: 15000 });
  await storedPage.getByText('You chose').waitFor({ timeout: 15000 });
  await waitReady(storedPage);
  result.storedLive = await conversation(storedPage);
  result.storedEnd = await reloaded(storedPage, async (page) => (await status(page)) === 'ready'
    && (await page.getByTestId('message-assistant').count()) >= 3);
  result.storedEnd.answered = await storedPage.getByTestId('answered').allTextContents();
  result.storedSession = storedSession;
  await storedPage.screenshot({ path: config.screenshot.replace('.png', '-reload-end.png'), fullPage: true });

  // 7. the human in the loop: a question answered, then an approval approved and one denied
  const askSession = `e2e-ask-${config.build}-${Date.now()}`;
  const askPage = await open(askSession);
  await send(askPage, 'ask me');
  await askPage.locator('[data-testid="question"][data-state="input-available"]').waitFor({ timeout: 15000 });
  result.question = { asked: await askPage.locator('.question-text').first().textContent() };
  await askPage.screenshot({ path: config.screenshot.replace('.png', '-question-asked.png'), fullPage: true });
  await askPage.getByTestId('answer-option').filter({ hasText: 'green' }).click();
  await askPage.getByText('You chose').waitFor({ timeout: 15000 });
  await waitReady(askPage);
  result.question = { ...result.question, session: askSession, text: await lastAssistantText(askPage),
    assistants: await askPage.getByTestId('message-assistant').count(),
    answered: await askPage.getByTestId('answered').first().textContent(), status: await status(askPage) };
  await askPage.screenshot({ path: config.screenshot.replace('.png', '-question.png'), fullPage: true });

  const approvalSession = `e2e-approval-${config.build}-${Date.now()}`;
  const approvalPage = await open(approvalSession);
  const decide = async (prompt, approved) => {
    const before = await approvalPage.getByTestId('message-assistant').count();
    await send(approvalPage, prompt);
    if (config.build === 'ai7') {  // a real tool approval
      const button = approvalPage.getByTestId(approved ? 'approve' : 'deny');
      await button.waitFor({ timeout: 15000 });
      if (approved) {
        await approvalPage.screenshot({ path: config.screenshot.replace('.png', '-approval-requested.png'), fullPage: true });
      }
      await button.click();
    } else {  // ai 5: the approval's question form
      const option = approvalPage.locator('[data-testid="question"][data-state="input-available"] [data-testid="answer-option"]')
        .filter({ hasText: approved ? 'approve' : 'deny' });
      await option.waitFor({ timeout: 15000 });
      if (approved) {
        await approvalPage.screenshot({ path: config.screenshot.replace('.png', '-approval-requested.png'), fullPage: true });
      }
      await option.click();
    }
    await approvalPage.getByText(approved ? 'Done: the branch is deleted.' : 'I left the branch alone')
      .nth(0).waitFor({ timeout: 15000 });
    await waitReady(approvalPage);
    const tool = approvalPage.locator('[data-testid="tool"][data-name="delete_branch"]').nth(before);
    return { state: await tool.getAttribute('data-state'), text: await lastAssistantText(approvalPage) };
  };
  result.approval = {
    session: approvalSession,
    approved: await decide('please approve a cleanup', true),
    denied: await decide('approve one more cleanup', false),
    assistants: await approvalPage.getByTestId('message-assistant').count(),
    toolStates: await approvalPage.evaluate(() => window.__toolStates),
    status: await status(approvalPage),
  };
  await approvalPage.screenshot({ path: config.screenshot.replace('.png', '-approval.png'), fullPage: true });

  // 8. the gateway's own demo page (make demo) answers the same way
  const demoPage = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  demoPage.on('pageerror', (e) => (result.pageErrors ||= []).push(String(e)));
  await demoPage.goto(`${config.api}/`);
  const demoSend = async (text) => {
    await demoPage.fill('#input', text);
    await demoPage.click('#send');
  };
  await demoSend('ask me');
  await demoPage.click('button[data-answer][data-value="blue"]', { timeout: 15000 });
  await demoPage.locator('#chat').getByText('You chose **blue**: a fine choice.').waitFor({ timeout: 15000 });
  await demoSend('approve');
  const approveButton = config.build === 'ai7'
    ? 'button[data-approve][data-value="yes"]' : 'button[data-answer][data-value="approve"]';
  await demoPage.click(approveButton, { timeout: 15000 });
  await demoPage.locator('#chat').getByText('Done: the branch is deleted.').waitFor({ timeout: 15000 });
  await sleep(300);
  result.demoPage = { messages: await demoPage.locator('#chat .msg').count(), status: await demoPage.textContent('#status') };
  await demoPage.screenshot({ path: config.screenshot.replace('.png', '-demo-page.png') });
  await demoPage.reload();  // the chat comes back from the gateway's store
  await demoPage.locator('#chat').getByText('Done: the branch is deleted.').waitFor({ timeout: 15000 });
  await sleep(500);
  result.demoPageReloaded = { messages: await demoPage.locator('#chat .msg').count(),
    texts: await demoPage.locator('#chat .msg').allTextContents() };
  await demoPage.screenshot({ path: config.screenshot.replace('.png', '-demo-page-reloaded.png') });
} catch (error) {
  result.failure = String(error && error.stack || error);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
