// The gateway these suites run, on the demo desk (desk.mjs) and its
// recording upstream: the repository's shared launcher
// (testing/node/gateway.mjs), which must stop cleanly, the upstream
// (testing/node/upstream.mjs) and the Open Responses checks of what the
// clients get (testing/node/responsescheck.mjs).
import { Gateway as Launcher } from '../../../testing/node/gateway.mjs';
import { ResponsesChecks } from '../../../testing/node/responsescheck.mjs';
import { Upstream } from '../../../testing/node/upstream.mjs';
import { deskAnswer, deskConfig } from './desk.mjs';

export class Gateway extends Launcher {
  constructor() {
    super({ tmpPrefix: 'agentgate-clients-' });
  }

  /** Builds the gateway and the checker of Responses API answers. */
  async build() {
    await super.build();
    /** Checks every Responses API answer fetched with checks.fetch. */
    this.checks = new ResponsesChecks(await this.buildCommand('./testing/responsescheck', 'responsescheck'));
  }

  /** Starts the upstream, then the gateway on the desk; baseURL is its OpenAI surface. */
  async start() {
    /** The desk's recording upstream: what every model call was sent. */
    this.upstream = new Upstream(deskAnswer);
    await this.upstream.start();
    await super.start(await this.writeConfig(deskConfig(this.upstream.baseURL)));
    this.baseURL = `${this.origin}/v1`;
  }

  /** Stops the gateway (see Launcher.stop), then the upstream; throws if the gateway had died before. */
  async stop() {
    const status = await super.stop();
    await this.upstream?.stop();
    if (status?.early) {
      throw new Error(`the gateway died during the tests (code ${status.code}, signal ${status.signal}):\n${this.stderr.join('\n')}`);
    }
    return status;
  }
}
