// The agentgate binary as the Node test suites run it: built once from
// cmd/gateway, started on 127.0.0.1:0 with a config file, its output kept,
// stopped with SIGTERM.
//
// Plain ESM on Node's own modules only: each suite (clients/, e2e/adk,
// e2e/a2a) imports it by relative path and still needs nothing but its own
// node_modules.
import { spawn, execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const execFileP = promisify(execFile);

/** The repository root. */
export const repoDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export class Gateway {
  /**
   * @param {object} [opts]
   * @param {string} [opts.tmpPrefix] name prefix of the temporary directory build() makes
   */
  constructor({ tmpPrefix = 'agentgate-' } = {}) {
    this.tmpPrefix = tmpPrefix;
    /** @type {object[]} parsed JSON log lines from stdout (a line that is not JSON as {msg: line}) */
    this.logs = [];
    /** @type {string[]} raw stderr lines */
    this.stderr = [];
    /** @type {string[]} stdout and stderr lines as they came, for failure reports */
    this.output = [];
    this.logWaiters = new Set();
  }

  /** go build -o <tmpdir>/agentgate ./cmd/gateway, from the repository root. */
  async build() {
    const started = Date.now();
    this.bin = await this.buildCommand('./cmd/gateway', 'agentgate');
    this.buildMs = Date.now() - started;
  }

  /**
   * go build -o <tmpdir>/<name> <pkg> (a package path from the repository
   * root), in the temporary directory stop() removes; returns the binary's path.
   */
  async buildCommand(pkg, name) {
    this.dir ??= await mkdtemp(path.join(tmpdir(), this.tmpPrefix));
    const bin = path.join(this.dir, name);
    await execFileP('go', ['build', '-o', bin, pkg], { cwd: repoDir, maxBuffer: 16 << 20, env: process.env });
    return bin;
  }

  /** Writes text to config.yaml in the temporary directory and returns its path. */
  async writeConfig(text) {
    const file = path.join(this.dir, 'config.yaml');
    await writeFile(file, text);
    return file;
  }

  /**
   * Starts the binary with the config file at config on 127.0.0.1:0, learns
   * the port from its start-up log line and waits for /healthz.
   */
  async start(config) {
    this.config = config;
    const env = { ...process.env };
    // The demo config must not switch to Redis because the developer's shell has REDIS_URL.
    delete env.REDIS_URL;
    delete env.AGENTGATE_ADDR;
    delete env.AGENTGATE_CONFIG;
    this.proc = spawn(this.bin, ['-config', config, '-addr', '127.0.0.1:0'], {
      cwd: repoDir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.proc.once('exit', (code, signal) => resolve({ code, signal })));
    // Never leave the gateway behind, even if the test process ends abruptly.
    const proc = this.proc;
    process.once('exit', () => proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL'));
    // AGENTGATE_TEST_LOG=<file> keeps everything the gateway printed.
    const keep = process.env.AGENTGATE_TEST_LOG ? createWriteStream(process.env.AGENTGATE_TEST_LOG) : null;
    this.proc.once('close', () => keep?.end());
    createInterface({ input: this.proc.stderr }).on('line', (l) => {
      this.stderr.push(l);
      this.output.push(l);
      if (keep && !keep.writableEnded) keep.write(`${l}\n`);
    });

    const listening = new Promise((resolve, reject) => {
      createInterface({ input: this.proc.stdout }).on('line', (line) => {
        this.output.push(line);
        if (keep && !keep.writableEnded) keep.write(`${line}\n`);
        let entry;
        try {
          entry = JSON.parse(line);
        } catch {
          entry = { msg: line };
        }
        this.logs.push(entry);
        if (entry.msg === 'agentgate listening') resolve(entry.addr);
        for (const w of this.logWaiters) w();
      });
      this.exited.then(({ code, signal }) =>
        reject(new Error(`gateway exited during start-up (code ${code}, signal ${signal}):\n${this.output.join('\n')}`)),
      );
    });
    const addr = await withTimeout(listening, 10_000, 'gateway did not log "agentgate listening"');
    this.origin = `http://${addr}`;

    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        if ((await fetch(`${this.origin}/healthz`)).ok) break;
      } catch {
        // not accepting yet
      }
      if (Date.now() > deadline) throw new Error(`gateway at ${this.origin} never answered /healthz`);
      await sleep(50);
    }
  }

  /**
   * Waits for the first log entry matching pred (already logged or still to come).
   * @param {(entry: object) => boolean} pred
   */
  async waitForLog(pred, timeoutMs = 5_000) {
    const found = this.logs.find(pred);
    if (found) return found;
    let waiter;
    const p = new Promise((resolve) => {
      waiter = () => {
        const e = this.logs.find(pred);
        if (e) resolve(e);
      };
      this.logWaiters.add(waiter);
    });
    try {
      return await withTimeout(p, timeoutMs, 'no matching gateway log entry');
    } finally {
      this.logWaiters.delete(waiter);
    }
  }

  /**
   * SIGTERM (graceful shutdown), SIGKILL after 5 s; removes the temporary
   * directory. Returns how the process ended ({code, signal}, and early:
   * true if it had died before), or undefined if it never started.
   */
  async stop() {
    let status;
    if (this.proc) {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
        status = { ...(await this.exited), early: true };
      } else {
        this.proc.kill('SIGTERM');
        const timer = setTimeout(() => this.proc.kill('SIGKILL'), 5_000);
        status = await this.exited;
        clearTimeout(timer);
      }
    }
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
    return status;
  }
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

function withTimeout(promise, ms, message) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${message} (after ${ms} ms)`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
