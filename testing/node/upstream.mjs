// A recording OpenAI-compatible upstream for the Node suites: the model
// server the gateway under test calls (POST /v1/chat/completions, streamed
// and not). It keeps every request it received, parsed, so that a test
// asserts on exactly what the model was sent, and it answers what a
// function of the request says, so that the answers do not depend on the
// order in which calls arrive.
//
// Plain ESM on Node's own modules only, like gateway.mjs beside it.
import { createServer } from 'node:http';

/**
 * What the model answers: text, or tool calls (with optional text before
 * them). Text is streamed in chunks of chunkSize characters, delayMs apart.
 * @typedef {object} Answer
 * @property {string} [text]
 * @property {{name: string, arguments: object}[]} [toolCalls]
 * @property {number} [chunkSize] default 6
 * @property {number} [delayMs] default 0
 */

/**
 * One request the upstream received.
 * @typedef {object} Call
 * @property {string} model the request's model: the part after "<provider>/" of the agent's model
 * @property {object} body the request's JSON
 * @property {object} headers
 * @property {boolean} aborted the caller closed the connection before the answer ended
 * @property {Promise<void>} ended settles once the answer ended or the connection closed
 */

export class Upstream {
  /** @param {(body: object) => Answer} answer what to answer a request with */
  constructor(answer) {
    this.answer = answer;
    /** @type {Call[]} every request, in arrival order */
    this.calls = [];
    this.ids = 0;
  }

  /** Listens on a free loopback port. */
  async start() {
    this.server = createServer((req, res) => this.serve(req, res));
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address();
    /** The API root, for a provider's base_url. */
    this.baseURL = `http://127.0.0.1:${port}/v1`;
  }

  /** Closes the server and every open connection. */
  async stop() {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  /**
   * The calls from now on: the returned object's calls grow as requests
   * arrive (tests run one at a time, so they are the test's own).
   */
  record() {
    const from = this.calls.length;
    const up = this;
    return {
      get calls() {
        return up.calls.slice(from);
      },
    };
  }

  async serve(req, res) {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}`, type: 'invalid_request_error' } }));
      return;
    }
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw);
    let finished = false;
    let settle;
    const call = { model: body.model, body, headers: req.headers, aborted: false, ended: new Promise((r) => (settle = r)) };
    this.calls.push(call);
    res.once('close', () => {
      call.aborted = !finished;
      settle();
    });
    let answer;
    try {
      answer = this.answer(body);
    } catch (err) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `the fake's answer failed: ${err.stack}`, type: 'server_error' } }));
      finished = true;
      return;
    }
    const id = `chatcmpl-fake${++this.ids}`;
    const toolCalls = (answer.toolCalls ?? []).map((c, i) => ({
      id: `call_fake${this.ids}_${i}`,
      type: 'function',
      function: { name: c.name, arguments: JSON.stringify(c.arguments) },
    }));
    const text = answer.text ?? '';
    const usage = usageOf(body, text, toolCalls);
    const finish = toolCalls.length > 0 ? 'tool_calls' : 'stop';
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      const message = { role: 'assistant', content: text || null, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) };
      res.end(JSON.stringify({ id, object: 'chat.completion', created: 1, model: body.model, choices: [{ index: 0, message, finish_reason: finish }], usage }));
      finished = true;
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (choices, extra = {}) =>
      res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: body.model, choices, ...extra })}\n\n`);
    const size = answer.chunkSize ?? 6;
    send([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
    for (let i = 0; i < text.length; i += size) {
      if (res.destroyed) return;
      if (answer.delayMs) await sleep(answer.delayMs);
      send([{ index: 0, delta: { content: text.slice(i, i + size) }, finish_reason: null }]);
    }
    if (res.destroyed) return;
    if (toolCalls.length > 0) {
      send([{ index: 0, delta: { tool_calls: toolCalls.map((c, index) => ({ index, ...c })) }, finish_reason: null }]);
    }
    send([{ index: 0, delta: {}, finish_reason: finish }]);
    if (body.stream_options?.include_usage) send([], { usage });
    res.end('data: [DONE]\n\n');
    finished = true;
  }
}

/** The text of a message's content: a string, or its text parts joined. */
export function contentText(content) {
  if (typeof content === 'string') return content;
  return (content ?? []).map((p) => p.text ?? '').join('');
}

/**
 * A request's conversation as [role, text] pairs, for assertions: the
 * system message left out, an assistant's tool calls as
 * "name(arguments)" (several joined by a space), a tool message as its
 * content.
 */
export function transcript(body) {
  return body.messages
    .filter((m) => m.role !== 'system')
    .map((m) => {
      if (m.tool_calls) return [m.role, m.tool_calls.map((c) => `${c.function.name}(${c.function.arguments})`).join(' ')];
      return [m.role, contentText(m.content)];
    });
}

/** A request's system message ('' without one). */
export function systemText(body) {
  const m = body.messages[0];
  return m?.role === 'system' ? contentText(m.content) : '';
}

/**
 * Token counts of a call, in words: what the request holds (so that a
 * longer history costs more) and what the answer says.
 */
function usageOf(body, text, toolCalls) {
  const words = (s) => (s.match(/\S+/g) ?? []).length;
  let prompt = 0;
  for (const m of body.messages) {
    prompt += words(contentText(m.content));
    for (const c of m.tool_calls ?? []) prompt += words(`${c.function.name} ${c.function.arguments}`);
  }
  const completion = Math.max(1, words(text) + toolCalls.reduce((n, c) => n + words(`${c.function.name} ${c.function.arguments}`), 0));
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}
