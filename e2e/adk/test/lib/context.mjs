// What both suites share: the one gateway and the one adk-web server of this
// test run, and the demo tree's scripted replies (the repository's config.yaml).
import { Gateway } from './gateway.mjs';
import { WebUI } from './webui.mjs';

export const gw = new Gateway();
export const web = new WebUI();

/** The demo app (models[].id in config.yaml). */
export const APP = 'support-desk';

/** What the greeter says after "hello" transfers to it. */
export const GREETER_REPLY =
  'Hello! Welcome to the agentgate demo. I am the greeter; the coordinator handed you to me.';
/** The summarizer agent's answer to a request. */
export const summarizerReply = (request) => `In short: ${request}`;
/** The coordinator's reply after calling the summarizer agent as a tool. */
export const summaryReply = (request) => `Here is the summary from the summarizer agent:\n${summarizerReply(request)}`;

let n = 0;
/** An id unique to this run (user ids, session ids). */
export const uniqueId = (label) => `e2e-${label}-${process.pid}-${Date.now().toString(36)}-${++n}`;
