// Builds cmd/gateway once, writes a test variant of the repository's
// config.yaml (CORS origin of the web UI, slower streaming so partial text is
// visible), starts the binary on a free port and stops it.
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const execFileP = promisify(execFile);

/** e2e/adk (this package's root). */
export const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The repository root. */
export const repoDir = path.resolve(packageDir, '..', '..');

/**
 * The repository's config.yaml with `server.cors_origins` set to origins and
 * the scripted model's chunk_delay set to chunkDelay. Throws if config.yaml no
 * longer has the lines this edits, so a config change cannot silently make the
 * test meaningless.
 */
export async function testConfig({ corsOrigins, chunkDelay }) {
  let text = await readFile(path.join(repoDir, 'config.yaml'), 'utf8');
  const edit = (re, line) => {
    if (!re.test(text)) throw new Error(`config.yaml has no line matching ${re}: update e2e/adk/test/lib/gateway.mjs`);
    text = text.replace(re, line);
  };
  edit(/^(\s*)cors_origins:.*$/m, `$1cors_origins: ${JSON.stringify(corsOrigins)}`);
  if (chunkDelay) edit(/^(\s*)chunk_delay:.*$/m, `$1chunk_delay: ${chunkDelay}`);
  return text;
}

export class Gateway {
  constructor() {
    /** @type {string[]} stdout and stderr lines, for failure reports */
    this.output = [];
  }

  /** go build -o <tmpdir>/agentgate ./cmd/gateway, from the repository root. */
  async build() {
    this.dir = await mkdtemp(path.join(tmpdir(), 'agentgate-e2e-adk-'));
    this.bin = path.join(this.dir, 'agentgate');
    const started = Date.now();
    await execFileP('go', ['build', '-o', this.bin, './cmd/gateway'], {
      cwd: repoDir,
      maxBuffer: 16 << 20,
      env: process.env,
    });
    this.buildMs = Date.now() - started;
  }

  /**
   * Starts the binary with the given config text on 127.0.0.1:0, learns the
   * port from its start-up log line and waits for /healthz.
   */
  async start(configText) {
    this.config = path.join(this.dir, 'config.yaml');
    await writeFile(this.config, configText);
    const env = { ...process.env };
    // The demo config must not switch to Redis because the shell has REDIS_URL.
    delete env.REDIS_URL;
    delete env.AGENTGATE_ADDR;
    delete env.AGENTGATE_CONFIG;
    this.proc = spawn(this.bin, ['-config', this.config, '-addr', '127.0.0.1:0'], {
      cwd: repoDir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.proc.once('exit', (code, signal) => resolve({ code, signal })));
    createInterface({ input: this.proc.stderr }).on('line', (l) => this.output.push(l));
    const listening = new Promise((resolve, reject) => {
      createInterface({ input: this.proc.stdout }).on('line', (line) => {
        this.output.push(line);
        try {
          const entry = JSON.parse(line);
          if (entry.msg === 'agentgate listening') resolve(entry.addr);
        } catch {
          // not a JSON log line
        }
      });
      this.exited.then(({ code, signal }) =>
        reject(
          new Error(`gateway exited during start-up (code ${code}, signal ${signal}):\n${this.output.join('\n')}`),
        ),
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

  /** SIGTERM (graceful shutdown), SIGKILL after 5 s; removes the temporary directory. */
  async stop() {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGTERM');
      const timer = setTimeout(() => this.proc.kill('SIGKILL'), 5_000);
      await this.exited;
      clearTimeout(timer);
    }
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

export function withTimeout(promise, ms, message) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${message} (after ${ms} ms)`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
