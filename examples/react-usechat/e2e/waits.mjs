// What the scenarios wait on: the event that proves a step is over (a request's end, the page's
// status, the gateway's upstream log), never the clock. The scenarios run at once on a busy
// machine, where a fixed sleep is either too short or time wasted.

// `promise`, whose failure is reported only where it is awaited: a wait set up before its action
// is left behind when the scenario fails first, and must not end the whole run.
export function armed(promise) {
  promise.catch(() => {});
  return promise;
}

// For page.waitForFunction: a look every 50 ms. Its default, one on every animation frame, keeps
// each of the pages drawing frames, a cost that adds up with all of them open at once.
export const POLL = { polling: 50 };

// The app's (and the demo page's) chat POST, and the GET that resumes a chat's running answer.
export const isChatPost = (request) =>
  request.method() === 'POST' && /^\/api\/sessions\/[^/]+\/chat$/.test(new URL(request.url()).pathname);
export const isResumeGet = (request) =>
  request.method() === 'GET' && /^\/api\/sessions\/[^/]+\/chat\/.+\/stream$/.test(new URL(request.url()).pathname);

// Resolves once the first request of `page` that `matches` is over for the browser: its response
// read to the end (null) or failed (the failure, as an aborted stream does). Set it up before
// the action that sends the request.
export function requestEnd(page, matches, timeout = 45_000) {
  return armed(new Promise((resolve, reject) => {
    const done = (request) => {
      if (!matches(request)) return;
      forget();
      resolve(request.failure()?.errorText ?? null);
    };
    const timer = setTimeout(() => {
      forget();
      reject(new Error(`no matching request of ${page.url()} ended within ${timeout} ms`));
    }, timeout);
    const forget = () => {
      clearTimeout(timer);
      page.off('requestfinished', done);
      page.off('requestfailed', done);
    };
    page.on('requestfinished', done);
    page.on('requestfailed', done);
  }));
}

// Waits until the demo upstream has ended the session's turn: its message.finalize (after an
// abort frame: "canceled") is in the gateway's /demo/upstream-events log, and nothing of that
// turn comes after it.
export async function upstreamTurnEnded(api, session, timeout = 45_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const response = await fetch(`${api}/demo/upstream-events/${encodeURIComponent(session)}`);
    if ((await response.json()).sent.some((event) => event.type === 'message.finalize')) return;
    if (Date.now() > deadline) throw new Error(`the upstream's turn of ${session} still runs after ${timeout} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// Resolves after the page has rendered what it has received so far (a frame, then its tasks).
export const painted = (page) =>
  page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve))));

// `step`s run at most `slots` at a time, in the order they were asked for.
function queue(slots) {
  const waiting = [];
  let running = 0;
  const next = () => {
    if (running >= slots || !waiting.length) return;
    running += 1;
    const [step, resolve, reject] = waiting.shift();
    step().then(resolve, reject).finally(() => {
      running -= 1;
      next();
    });
  };
  return (step) => new Promise((resolve, reject) => {
    waiting.push([step, resolve, reject]);
    next();
  });
}

// For a scenario's start: its page opened (a renderer process started, the app's bundle run), the
// most CPU it takes at a time, and for the scenarios that follow a slow answer to its end, what
// they do up to that answer. Started all at once, the scenarios that set the run's length would
// wait behind the others: two starts at a time (the machine's cores), in the order run.mjs
// starts the scenarios, the longest first.
export const starting = queue(2);
