// What every suite shares: the one gateway process of this test run (with
// its recording upstream and its checks), and the demo desk's replies.
import { Gateway } from './gateway.mjs';

export { MODEL, INSTRUCTIONS, COORDINATOR_REPLY, GREETER_REPLY, summary, summaryReply, WEATHER_PREFIX, taskReply } from './desk.mjs';

export const gw = new Gateway();

/** The client tool the demo coordinator calls when the request declares it and mentions the weather. */
export const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather at a location, looked up by the client.',
    parameters: {
      type: 'object',
      properties: { location: { type: 'string' } },
      required: ['location'],
    },
  },
};

/** Tool-call ids the gateway hands out: at most 40 characters of [A-Za-z0-9_-]. */
export const TOOL_CALL_ID = /^[A-Za-z0-9_-]{1,40}$/;

let n = 0;
/** A session id unique to this run. */
export const sessionId = (label) => `clients-${label}-${process.pid}-${Date.now().toString(36)}-${++n}`;

/** A task long enough that the task executor streams for several seconds (6 characters every 15 ms). */
export const LONG_TASK = `please do this: ${'lorem ipsum dolor sit amet '.repeat(60).trim()}`;
