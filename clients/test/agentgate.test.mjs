// The one test file: builds and starts the gateway once for every suite.
// Run with `npm test` from clients/.
import { before, after } from 'node:test';
import { gw } from './lib/context.mjs';
import './openai.mjs';
import './ai-sdk.mjs';
import './responses.mjs';

before(
  async () => {
    await gw.build();
    await gw.start();
    console.error(`agentgate built in ${gw.buildMs} ms, serving ${gw.baseURL} with ${gw.config}`);
  },
  { timeout: 300_000 },
);

after(async () => {
  const status = await gw.stop();
  // SIGTERM is a graceful shutdown: exit status 0 (CONTRACT.md, "Starting it").
  if (status && (status.code !== 0 || status.signal !== null)) {
    throw new Error(`gateway exited with code ${status.code}, signal ${status.signal} after SIGTERM:\n${gw.stderr.join('\n')}`);
  }
});
