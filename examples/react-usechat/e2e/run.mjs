// Drives the examples in Debian's headless Chromium (playwright-core, no browser download)
// against running chunkbridge gateways and prints what each scenario observed, as JSON: the
// useChat app of each build (usechat.mjs) and the gateway's own demo page (demo_page.mjs).
// The scenarios spend most of their time waiting for the demo agent's paced answers, so they run
// at once, each in its own context of one Chromium: the run takes about as long as the slowest.
// The pytest test (tests/test_e2e_browser.py) starts the servers and asserts on the result:
//
//   {"ai5/chat": {…}, …, "ai5/demoPage": {…}, "ai7/chat": {…}, …, "agentDemo": {…}, "busyDemo": {…}}
//
// where a scenario that failed says so ("failure") beside what it saw until then, and each one
// lists the errors its pages threw ("pageErrors").
//
//   node e2e/run.mjs '{"artifacts": "dir for screenshots",
//     "builds": [{"build": "ai5", "appUrl": ".../ai5/index.html", "api": "gateway URL"}, …],
//     "agentDemo": {"api": "URL of a gateway run with demo --agent --telemetry otlp"},
//     "busyDemo": {"api": "URL of a gateway run with demo --busy queue"}}'
import { chromium } from 'playwright-core';
import { agentDemo, busyDemo, demoPage } from './demo_page.mjs';
import { useChatScenarios } from './usechat.mjs';

const config = JSON.parse(process.argv[2]);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

// Runs a scenario in a context of its own: what it saw, with its failure and its pages' errors,
// so that one scenario failing leaves the others' results whole.
async function play(scenario) {
  const context = await browser.newContext({ viewport: { width: 900, height: 1000 } });
  const seen = { pageErrors: [] };
  context.on('weberror', (error) => seen.pageErrors.push(String(error.error())));
  try {
    await scenario(context, seen);
  } catch (error) {
    seen.failure = String(error?.stack || error);
  } finally {
    await context.close();
  }
  return seen;
}

const scenarios = {};  // by the key of its result: "ai5/stop", …, "agentDemo"
for (const app of config.builds) {
  const all = { ...useChatScenarios(app, config.artifacts), demoPage: demoPage(app, config.artifacts) };
  for (const [name, scenario] of Object.entries(all)) scenarios[`${app.build}/${name}`] = scenario;
}
if (config.agentDemo) scenarios.agentDemo = agentDemo(config.agentDemo, config.artifacts);
if (config.busyDemo) scenarios.busyDemo = busyDemo(config.busyDemo, config.artifacts);

// The scenarios that follow a slow answer to its end set the run's length: they start first, the
// longest first (waits.mjs: starting).
const FIRST = ['stored', 'resume', 'busyDemo'];
const rank = (key) => {
  const index = FIRST.indexOf(key.split('/')[1] ?? key);
  return index === -1 ? FIRST.length : index;
};
const keys = Object.keys(scenarios).sort((a, b) => rank(a) - rank(b));

try {
  const seen = await Promise.all(keys.map(async (key) => [key, await play(scenarios[key])]));
  console.log(JSON.stringify(Object.fromEntries(seen)));
} finally {
  await browser.close();
}
