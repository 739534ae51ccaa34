// Every Responses API answer a client gets, checked against the Open
// Responses specification by the gateway's own checks
// (gateway/openaiwire/responsescheck, run by the testing/responsescheck
// command): give a client `checks.fetch`, and `await checks.verify()` after
// each test. The client still reads the answer as it comes; the check
// reads a copy of it.
//
// Plain ESM on Node's own modules only, like gateway.mjs beside it.
import { spawn } from 'node:child_process';

/** Routes whose 200 answers are a response object or a stream of one. */
const responseRoute = /\/responses(\/[^/]+(\/cancel)?)?$/;

export class ResponsesChecks {
  /** @param {string} bin the testing/responsescheck binary (Launcher.buildCommand) */
  constructor(bin) {
    this.bin = bin;
    this.pending = [];
    /** Bodies checked so far. */
    this.checked = 0;
    /** @type {typeof fetch} a fetch for clients: it checks what the gateway answers */
    this.fetch = (input, init) => this.fetchChecked(input, init);
  }

  async fetchChecked(input, init) {
    const res = await fetch(input, init);
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const type = res.headers.get('content-type') ?? '';
    const stream = type.startsWith('text/event-stream');
    if (res.status !== 200 || !res.body || !responseRoute.test(url.pathname) || method === 'DELETE' || (!stream && !type.startsWith('application/json'))) {
      return res;
    }
    const args = stream ? ['-stream', '-after', url.searchParams.get('starting_after') ?? '-1'] : [];
    const what = `${method} ${url.pathname}${url.search}`;
    // The client reads one branch, the check the other; a client that
    // stops reading early cancels both, and the check then allows a cut.
    const [mine, theirs] = res.body.tee();
    const mineReader = mine.getReader();
    const theirsReader = theirs.getReader();
    const state = { cut: false };
    this.pending.push(this.check(mineReader, args, what, state));
    const body = new ReadableStream({
      async pull(controller) {
        try {
          const { done, value } = await theirsReader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (err) {
          controller.error(err);
        }
      },
      cancel(reason) {
        state.cut = true;
        return Promise.all([theirsReader.cancel(reason), mineReader.cancel(reason)]);
      },
    });
    const copy = new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    Object.defineProperty(copy, 'url', { value: res.url });
    return copy;
  }

  /** Reads a whole body off reader and runs the checker on it. */
  async check(reader, args, what, state) {
    const chunks = [];
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
      }
    } catch {
      state.cut = true; // aborted: what came is checked as a stream cut short
    }
    if (state.cut && args[0] !== '-stream') return null; // half a JSON object: nothing to check
    if (state.cut) args = [...args, '-partial'];
    this.checked++;
    const { code, stderr } = await runChecker(this.bin, args, Buffer.concat(chunks));
    return code === 0 ? null : `${what}:\n${stderr}`;
  }

  /**
   * Waits for the checks of every body fetched so far and throws if one
   * failed; the next verify sees only the bodies after this one's.
   */
  async verify() {
    const pending = this.pending;
    this.pending = [];
    const failures = (await Promise.all(pending)).filter(Boolean);
    if (failures.length > 0) {
      throw new Error(`${failures.length} answer(s) break the Open Responses specification:\n${failures.join('\n')}`);
    }
  }
}

function runChecker(bin, args, body) {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, args, { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d) => (stderr += d));
    proc.on('error', reject);
    proc.on('close', (code) => resolve({ code, stderr }));
    proc.stdin.end(body);
  });
}
