// What every suite shares: the one gateway process of this test run, and the
// demo tree's scripted replies (from the repository's config.yaml).
import { Gateway } from './gateway.mjs';

export const gw = new Gateway();

export const MODEL = 'support-desk';

/** The coordinator's fallback reply. */
export const COORDINATOR_REPLY =
  "I am the coordinator of agentgate's demo desk. Say hello, ask me to summarize some text, or give me a task.";
/** What the greeter says after "hello" transfers to it. */
export const GREETER_REPLY =
  'Hello! Welcome to the agentgate demo. I am the greeter; the coordinator handed you to me.';
/** The coordinator's reply after calling the summarizer agent as a tool. */
export const summaryReply = (request) => `Here is the summary from the summarizer agent:\nIn short: ${request}`;
/** The coordinator's reply once the client's get_weather result is back. */
export const WEATHER_PREFIX = 'Your client reported: ';

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

/** A task long enough that the task executor streams for several seconds (chunk_delay 15ms, chunk_size 6). */
export const LONG_TASK = `please do this: ${'lorem ipsum dolor sit amet '.repeat(60).trim()}`;
