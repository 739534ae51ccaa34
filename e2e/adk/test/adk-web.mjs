// ADK's web UI (adk-web, bundled in @google/adk-devtools as dist/browser)
// against the gateway, in headless Chromium driven by playwright-core: the
// page is served from its own origin (CORS) and talks to the gateway as it
// talks to `adk api_server`. Nothing leaves localhost: every other request
// (Google Fonts, which the bundle links) is aborted.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { gw, web, APP, GREETER_REPLY, summaryReply } from './lib/context.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Collapses whitespace: the UI renders the reply's "\n" as markdown. */
const norm = (s) => s.replace(/\s+/g, ' ').trim();

export function adkWebSuite() {
  describe("ADK's web UI (adk-web of @google/adk-devtools) in headless Chromium", () => {
    let context;
    let page;
    let profileDir;
    let artifactsDir;
    /** Every gateway request the page made: method, path, status, body. */
    const calls = [];
    /** Gateway requests that failed in the browser (CORS, network). */
    const failed = [];
    /** Hosts other than localhost the page tried to reach (aborted). */
    const blocked = new Set();
    const pageErrors = [];

    const runRequests = () => calls.filter((c) => c.method === 'POST' && c.path === '/run_sse');
    const botBubbles = () => page.locator('app-event-row.bot .content-bubble.role-bot');

    /** Types a message and sends it with the send button. */
    async function send(message) {
      const sent = runRequests().length;
      await page.locator('textarea.chat-input-box').fill(message);
      await page.locator('button.send-message-btn').click();
      await waitFor(
        () => runRequests().length > sent && runRequests().at(-1).status !== undefined,
        'the /run_sse request',
      );
      return runRequests().at(-1);
    }

    async function waitFor(pred, what, ms = 15_000) {
      const deadline = Date.now() + ms;
      while (!(await pred())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }

    /** Records every distinct text of the bot bubbles as the page changes (partial rendering). */
    async function watchBotText() {
      await page.evaluate(() => {
        window.__botTexts = [];
        const seen = new Set();
        const grab = () => {
          for (const el of document.querySelectorAll('app-event-row.bot .content-bubble.role-bot')) {
            const t = el.textContent.replace(/\s+/g, ' ').trim();
            if (t && !seen.has(t)) {
              seen.add(t);
              window.__botTexts.push(t);
            }
          }
        };
        window.__botObserver?.disconnect();
        window.__botObserver = new MutationObserver(grab);
        window.__botObserver.observe(document.body, { subtree: true, childList: true, characterData: true });
      });
    }

    async function screenshot(t, name) {
      const file = path.join(artifactsDir, name);
      await page.screenshot({ path: file });
      t.diagnostic(`screenshot: ${file}`);
      console.error(`# screenshot: ${file}`);
    }

    before(async () => {
      if (!existsSync(CHROMIUM)) {
        throw new Error(
          `${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; .ci/run does) or set CHROMIUM_PATH`,
        );
      }
      artifactsDir = process.env.ADK_E2E_ARTIFACTS || (await mkdtemp(path.join(tmpdir(), 'agentgate-adk-web-')));
      await mkdir(artifactsDir, { recursive: true });
      profileDir = await mkdtemp(path.join(tmpdir(), 'agentgate-chromium-'));
      context = await chromium.launchPersistentContext(profileDir, {
        executablePath: CHROMIUM,
        headless: true,
        args: CHROMIUM_ARGS,
        viewport: { width: 1400, height: 900 },
        serviceWorkers: 'block',
      });
      await context.route('**/*', (route) => {
        const { hostname } = new URL(route.request().url());
        if (hostname === '127.0.0.1' || hostname === 'localhost') return route.continue();
        blocked.add(hostname);
        return route.abort();
      });
      page = context.pages()[0] ?? (await context.newPage());
      page.on('pageerror', (err) => pageErrors.push(String(err)));
      page.on('request', (req) => {
        if (!req.url().startsWith(gw.origin)) return;
        const u = new URL(req.url());
        const call = { method: req.method(), path: u.pathname, search: u.search, body: req.postData() };
        calls.push(call);
        req
          .response()
          .then((res) => {
            call.status = res ? res.status() : 'none';
            call.allowOrigin = res?.headers()['access-control-allow-origin'];
          })
          .catch(() => (call.status = 'failed'));
      });
      page.on('requestfailed', (req) => {
        if (req.url().startsWith(gw.origin) && req.failure()?.errorText !== 'net::ERR_ABORTED') {
          failed.push(`${req.method()} ${req.url()}: ${req.failure()?.errorText}`);
        }
      });
    });

    after(async () => {
      await context?.close();
      if (profileDir) await rm(profileDir, { recursive: true, force: true });
    });

    test('the UI loads from its own origin, lists the apps and picks support-desk', async () => {
      await page.goto(`${web.origin}/`);
      const picker = page.locator('button.selector-button[mattooltip="Select an app"]');
      await picker.waitFor({ timeout: 30_000 });
      await waitFor(() => calls.some((c) => c.path === '/list-apps' && c.status === 200), 'GET /list-apps');
      assert.ok(
        web.requests.includes('/assets/config/runtime-config.json'),
        'the UI read its runtime-config.json (backendUrl = the gateway)',
      );
      // Pick the app by hand, as a person would: the app list, then the app.
      await picker.click();
      // adk-web asks for the app's agent graph when an app is selected (build_graph).
      await waitFor(
        () => calls.some((c) => c.path === `/dev/apps/${APP}/build_graph` && c.status !== undefined),
        'GET build_graph',
      );
      const item = page.getByText(APP, { exact: true }).last();
      await item.waitFor();
      await item.click();
      await page.locator('textarea.chat-input-box').waitFor();
      await assert.doesNotReject(
        page
          .locator('button.selector-button[mattooltip="Select an app"]', { hasText: APP })
          .waitFor({ timeout: 5_000 }),
        'the app picker shows support-desk',
      );
      // Turn on token streaming (More options > Streaming): runs then send "streaming": true.
      await page.locator('button[aria-label="More options"]').click();
      await page.locator('.cdk-overlay-container button', { hasText: 'Streaming' }).click();
      await page.keyboard.press('Escape');
      assert.equal(await page.evaluate(() => localStorage.getItem('adk-use-sse')), 'true');
    });

    test('"hello": the transfer shows and the greeter\'s answer streams in, once', async (t) => {
      const errorsBefore = pageErrors.length;
      await watchBotText();
      const run = await send('hello');
      const body = JSON.parse(run.body);
      assert.equal(body.appName, APP);
      assert.equal(body.streaming, true);
      assert.deepEqual(body.newMessage, { role: 'user', parts: [{ text: 'hello' }] });
      assert.equal(run.status, 200);

      const greeting = botBubbles().filter({ hasText: GREETER_REPLY });
      await greeting.first().waitFor({ timeout: 15_000 });
      // The transfer: the call chip, and the transfer chip from actions.transferToAgent.
      await page.getByText('transfer_to_agent("greeter")').waitFor();
      await page.getByText('coordinator → greeter').waitFor();
      await page.waitForTimeout(300); // let anything late arrive before counting
      assert.equal(await greeting.count(), 1, 'the final event replaced the partial text: the greeting shows once');

      // adk-web rendered the greeting growing, partial by partial, before the final event.
      const seen = await page.evaluate(() => window.__botTexts);
      const prefixes = seen.filter((s) => s !== GREETER_REPLY && GREETER_REPLY.startsWith(s));
      assert.ok(prefixes.length >= 1, `no partial greeting was rendered; texts seen: ${JSON.stringify(seen)}`);
      t.diagnostic(`partial renderings seen: ${prefixes.length}`);

      // The author: selecting the greeting's row shows the event's details.
      await greeting.first().click();
      // The event panel opens on the agent graph (build_graph_image, the selected agent
      // highlighted) now that the app has one; its info tab holds the event's details.
      await page.locator('svg', { hasText: 'coordinator' }).first().waitFor();
      await screenshot(t, 'adk-web-graph.png');
      await page.locator('mat-icon', { hasText: /^info$/ }).first().click();
      await page.getByText('Author').first().waitFor();
      const authorRow = page.locator('tr', { hasText: 'Author' }).first();
      assert.match(await authorRow.innerText(), /greeter/);
      await screenshot(t, 'adk-web-hello.png');
      assert.deepEqual(pageErrors.slice(errorsBefore), [], 'no uncaught page error during the turn');
    });

    test('"summarize ...": the agent tool call, its response and the coordinator\'s answer show', async (t) => {
      const request = 'summarize the meeting notes: the build is green, we ship on Friday';
      const errorsBefore = pageErrors.length;
      await watchBotText();
      const run = await send(request);
      assert.equal(run.status, 200);
      const answer = botBubbles().filter({ hasText: norm(summaryReply(request)).slice(0, 60) });
      await answer.first().waitFor({ timeout: 15_000 });
      // The stream ends with the final event, which replaces the partial text:
      // wait for the whole answer rather than for a fixed time.
      await waitFor(
        async () => norm(await answer.first().innerText()) === norm(summaryReply(request)),
        "the coordinator's whole answer",
      );
      await page.waitForTimeout(300); // let anything late arrive before counting
      assert.equal(await answer.count(), 1);
      assert.equal(norm(await answer.first().innerText()), norm(summaryReply(request)));
      await page.getByText('summarizer("summarize the meeting notes').waitFor();
      await page.locator('.function-response-chip-container', { hasText: 'summarizer' }).first().waitFor();
      const seen = await page.evaluate(() => window.__botTexts);
      assert.ok(
        seen.some((s) => s !== norm(summaryReply(request)) && norm(summaryReply(request)).startsWith(s)),
        "the coordinator's answer was rendered partially before the final event",
      );
      await screenshot(t, 'adk-web-summarize.png');
      assert.deepEqual(pageErrors.slice(errorsBefore), [], 'no uncaught page error during the turn');
    });

    test('the Traces view shows each invocation\'s spans and latency (GET .../debug/trace/session/{id})', async (t) => {
      const errorsBefore = pageErrors.length;
      await page.locator('mat-button-toggle', { hasText: 'Traces' }).first().click();
      await waitFor(
        () =>
          calls.some(
            (c) => /^\/dev\/apps\/support-desk\/debug\/trace\/session\/[^/]+$/.test(c.path) && c.status === 200,
          ),
        'GET .../debug/trace/session/{id}',
      );
      // One row per invocation, with the spans of the turn under it.
      await page.getByText('Invocation ID:').first().waitFor({ timeout: 15_000 });
      const latencies = await page.getByText(/Total latency:/).allInnerTexts();
      t.diagnostic(`latencies shown: ${JSON.stringify(latencies)}`);
      assert.ok(latencies.length >= 2, `one trace per turn: ${JSON.stringify(latencies)}`);
      for (const l of latencies) assert.doesNotMatch(l, /Total latency: 0us/);
      // adk-web shows invoke_agent and execute_tool spans by their agent or tool name, chat
      // spans whole: the names the gateway served.
      const sessionPath = calls.find((c) => /\/debug\/trace\/session\//.test(c.path)).path;
      const served = await (await fetch(`${gw.origin}${sessionPath}`)).json();
      const names = new Set(served.map((s) => s.name));
      for (const n of ['invoke_agent coordinator', 'invoke_agent greeter', 'execute_tool summarizer', 'invoke_agent summarizer']) {
        assert.ok(names.has(n), `the session's spans include ${n}: ${JSON.stringify([...names])}`);
      }
      const chat = [...names].find((n) => n.startsWith('chat '));
      assert.ok(chat, 'a chat span');
      await page.getByText(chat, { exact: true }).first().waitFor();
      await page.getByText('transfer_to_agent', { exact: true }).first().waitFor();
      await page.getByText('greeter', { exact: true }).first().waitFor();
      await screenshot(t, 'adk-web-traces.png');
      await page.locator('mat-button-toggle', { hasText: 'Events' }).first().click();
      assert.deepEqual(pageErrors.slice(errorsBefore), [], 'no uncaught page error in the Traces view');
    });

    test('the agent graph is served as DOT (GET .../build_graph_image)', async () => {
      const res = await fetch(`${gw.origin}/dev/apps/${APP}/build_graph_image?dark_mode=false`);
      assert.equal(res.status, 200);
      const body = await res.json();
      assert.match(body.dotSrc, /"coordinator" -> "greeter"/);
      assert.match(body.dotSrc, /"coordinator" -> "tool:summarizer" \[style=dashed\]/);
      const asked = calls.filter((c) => c.path === `/dev/apps/${APP}/build_graph_image`);
      assert.ok(asked.every((c) => c.status === 200), `the UI's graph requests: ${JSON.stringify(asked)}`);
    });

    test('reloading the page shows the session from GET .../sessions/{id}', async (t) => {
      const session = calls.find((c) => c.method === 'POST' && /\/sessions$/.test(c.path));
      assert.ok(session, 'the UI created its session with POST .../sessions');
      assert.equal(session.status, 200);
      const url = new URL(page.url());
      t.diagnostic(`page url: ${url.pathname}${url.search}`);
      await page.reload();
      await botBubbles().filter({ hasText: GREETER_REPLY }).first().waitFor({ timeout: 15_000 });
      await page.getByText('coordinator → greeter').waitFor();
      assert.equal(await botBubbles().filter({ hasText: GREETER_REPLY }).count(), 1);
      assert.ok(
        calls.some((c) => c.method === 'GET' && /\/apps\/support-desk\/users\/[^/]+\/sessions\/[^/]+$/.test(c.path)),
        'the UI read the session back',
      );
      await screenshot(t, 'adk-web-reloaded.png');
    });

    test('the session list (GET .../sessions) shows the conversation', async () => {
      const sessionId = new URL(page.url()).searchParams.get('session');
      assert.ok(sessionId, 'the page URL names its session');
      await page.locator('button.selector-button[mattooltip="Select a session"]').click();
      await waitFor(
        () =>
          calls.some(
            (c) =>
              c.method === 'GET' && /\/apps\/support-desk\/users\/[^/]+\/sessions$/.test(c.path) && c.status === 200,
          ),
        'GET .../sessions',
      );
      const item = page.locator('app-session-tab .session-item', {
        has: page.locator('.session-real-id', { hasText: sessionId }),
      });
      await item.waitFor();
      // adk-web names a session by the first message it sent (state __session_metadata__.displayName).
      assert.match(await item.innerText(), /^hello\b/);
      // lastUpdateTime is read as epoch seconds: the date shown is this year's, not 1970's.
      assert.match(await item.locator('.session-date').innerText(), new RegExp(String(new Date().getFullYear())));
    });

    test('deleting the session from the session list (DELETE .../sessions/{id})', async () => {
      const sessionId = new URL(page.url()).searchParams.get('session');
      const item = page.locator('app-session-tab .session-item', {
        has: page.locator('.session-real-id', { hasText: sessionId }),
      });
      await item.hover();
      const errorsBefore = pageErrors.length;
      await item.hover();
      await item.locator('button[title="Delete session"]').click();
      await page.locator('mat-dialog-container').getByText('Confirm delete').waitFor();
      await page.locator('mat-dialog-container button', { hasText: 'Delete' }).click();
      const isDelete = (c) => c.method === 'DELETE' && c.path.endsWith(`/sessions/${sessionId}`);
      await waitFor(() => calls.some((c) => isDelete(c) && c.status !== undefined), 'DELETE .../sessions/{id}');
      assert.equal(calls.find(isDelete).status, 200);
      await item.waitFor({ state: 'detached' });
      const res = await fetch(`${gw.origin}/apps/${APP}/users/user/sessions/${sessionId}`);
      assert.equal(res.status, 404, 'the session is gone from the gateway');
      await page.keyboard.press('Escape');
      assert.deepEqual(pageErrors.slice(errorsBefore), [], 'no uncaught page error while deleting');
    });

    test('nothing failed: no 5xx, no CORS or network failure, nothing but localhost', (t) => {
      const serverErrors = calls.filter((c) => typeof c.status === 'number' && c.status >= 500);
      assert.deepEqual(serverErrors, [], 'no gateway answer was a 5xx');
      assert.deepEqual(failed, [], 'no gateway request failed in the browser (CORS, connection)');
      const answered = calls.filter((c) => typeof c.status === 'number');
      assert.ok(answered.length > 10);
      assert.deepEqual(
        [...new Set(answered.map((c) => c.allowOrigin))],
        [web.origin],
        "every answer allowed the UI's origin (server.cors_origins)",
      );
      // No uncaught page errors beyond unanswered app-info requests (there are none: see the build_graph test).
      const appInfo404 = calls.filter((c) => c.path === `/dev/apps/${APP}/build_graph` && c.status === 404).length;
      assert.ok(
        pageErrors.length <= appInfo404,
        `uncaught page errors beyond the ${appInfo404} of build_graph: ${JSON.stringify(pageErrors)}`,
      );
      const notFound = [...new Set(calls.filter((c) => c.status === 404).map((c) => c.path))];
      t.diagnostic(
        `gateway routes the UI called: ${[...new Set(calls.map((c) => `${c.method} ${c.path}`))].join(', ')}`,
      );
      t.diagnostic(`answered 404 (dev-only routes agentgate does not serve): ${notFound.join(', ') || 'none'}`);
      t.diagnostic(`aborted non-local hosts: ${[...blocked].join(', ') || 'none'}`);
      for (const p of notFound) assert.match(p, /^\/dev\//, `only /dev/... routes may be missing, not ${p}`);
    });

    test(
      "adk-web's app-info request is answered, so picking an app raises no uncaught page error",
      () => {
        const appInfo = calls.filter((c) => c.path === `/dev/apps/${APP}/build_graph`);
        assert.ok(appInfo.length > 0, 'the UI asked for the app info');
        assert.deepEqual([...new Set(appInfo.map((c) => c.status))], [200]);
        assert.deepEqual(pageErrors, [], 'no uncaught error in the page');
      },
    );
  });
}
