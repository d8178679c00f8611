// Drives the gateway's demo page in agent mode (`make demo AGENT=1`) in Debian's headless
// Chromium: a question that takes two tool steps, then a note that asks for approval, approved
// with the page's button. Prints what it saw as JSON (tests/test_e2e_browser.py asserts on it).
// With "traceScreenshot" (the demo runs with --telemetry otlp) it also reads the trace panel of
// the first question's request and takes a picture of it.
//
//   node e2e/demo_agent.mjs '{"api": "http://127.0.0.1:PORT", "screenshot": "out.png"}'
import { chromium } from 'playwright-core';

const config = JSON.parse(process.argv[2]);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});
const result = {};
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('pageerror', (e) => (result.pageErrors ||= []).push(String(e)));
  await page.goto(`${config.api}/`);
  result.header = await page.textContent('header');
  const send = async (text) => {
    await page.fill('#input', text);
    await page.click('#send');
  };
  await send('what is (2 + 3) × 4?');
  await page.locator('#chat').getByText('Done in 2 tool call(s)').waitFor({ timeout: 15000 });
  result.tools = await page.locator('#chat .tool').allTextContents();
  if (config.traceScreenshot) {
    await page.locator('#trace').getByText('execute_tool multiply').waitFor({ timeout: 15000 });
    await page.waitForTimeout(1200);  // the panel is drawn again once the last spans are in
    result.trace = await page.locator('#trace .span .n').allTextContents();
    await page.screenshot({ path: config.traceScreenshot });
  }
  await send('note: buy milk');
  await page.click('button[data-approve][data-value="yes"]', { timeout: 15000 });
  await page.locator('#chat').getByText('note 1 saved').first().waitFor({ timeout: 15000 });
  await page.waitForFunction(() => document.querySelector('#status').textContent.startsWith('finished'));
  result.status = await page.textContent('#status');
  result.texts = await page.locator('#chat .msg').allTextContents();
  await page.screenshot({ path: config.screenshot });
} catch (error) {
  result.failure = String((error && error.stack) || error);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
