// The gateway these suites run: the repository's shared launcher
// (testing/node/gateway.mjs) on the demo config, which must stop cleanly.
import path from 'node:path';

import { Gateway as Launcher, repoDir } from '../../../testing/node/gateway.mjs';

export class Gateway extends Launcher {
  /**
   * @param {object} [opts]
   * @param {string} [opts.config] config file; default AGENTGATE_TEST_CONFIG or the repo's config.yaml
   */
  constructor(opts = {}) {
    super({ tmpPrefix: 'agentgate-clients-' });
    this.config = path.resolve(repoDir, opts.config ?? process.env.AGENTGATE_TEST_CONFIG ?? 'config.yaml');
  }

  /** Starts the gateway on the config; baseURL is its OpenAI surface. */
  async start() {
    await super.start(this.config);
    this.baseURL = `${this.origin}/v1`;
  }

  /** Stops the gateway (see Launcher.stop); throws if it had died before. */
  async stop() {
    const status = await super.stop();
    if (status?.early) {
      throw new Error(`the gateway died during the tests (code ${status.code}, signal ${status.signal}):\n${this.stderr.join('\n')}`);
    }
    return status;
  }
}
