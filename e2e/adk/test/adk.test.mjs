// The one test file: builds the gateway, starts adk-web's static server and
// the gateway (whose CORS origin is that server), then runs both suites.
// Run with `npm test` from e2e/adk/.
import { describe, before, after } from 'node:test';
import { gw, web } from './lib/context.mjs';
import { testConfig } from './lib/gateway.mjs';
import { adkClientSuite } from './adk-client.mjs';
import { adkWebSuite } from './adk-web.mjs';

describe("agentgate driven by ADK's own clients", () => {
  before(
    async () => {
      await Promise.all([gw.build(), web.start()]);
      // 40ms between 6-character chunks: the greeting streams for about 0.6 s,
      // long enough to see adk-web render partial text before the final event.
      await gw.start(await testConfig({ corsOrigins: [web.origin], chunkDelay: '40ms' }));
      web.backendUrl = gw.origin;
      console.error(`# agentgate built in ${gw.buildMs} ms, serving ${gw.origin}; adk-web served at ${web.origin}`);
    },
    { timeout: 300_000 },
  );

  after(async () => {
    await web.stop();
    await gw.stop();
  });

  adkClientSuite();
  adkWebSuite();
});
