// The gateway this suite (and e2e/a2a) runs: the repository's shared
// launcher (testing/node/gateway.mjs) started with config text, and a test
// variant of the repository's config.yaml (CORS origin of the web UI, slower
// streaming so partial text is visible).
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { Gateway as Launcher, repoDir } from '../../../../testing/node/gateway.mjs';

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

export class Gateway extends Launcher {
  constructor() {
    super({ tmpPrefix: 'agentgate-e2e-adk-' });
  }

  /** Starts the gateway with the given config text (written beside the binary). */
  async start(configText) {
    await super.start(await this.writeConfig(configText));
  }
}
