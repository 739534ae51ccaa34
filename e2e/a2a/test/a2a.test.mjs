// agentgate's A2A server (gateway/a2a*.go, docs/a2a.md) driven by the official
// A2A JavaScript SDK, @a2a-js/sdk, taken unchanged from npm: its v1.0 client
// (JSON-RPC, the card's first interface) and its v0.3 compatibility layer
// (a card without v1's supportedInterfaces, as a 0.3 agent publishes it).
//
// Two gateways run: "remote" serves an analyst and an agent that asks a
// question (get_user_choice); "front" serves a tree whose agents are the
// remote's, over A2A (as a transfer target and as an agent tool). The SDK
// talks to both, so the front case is two A2A hops: SDK -> agentgate ->
// agentgate.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';

import { Gateway } from '../../adk/test/lib/gateway.mjs';

const remoteConfig = `
server: {watch_config: false}
log: {level: info, format: json}
providers:
  - name: rs
    type: scripted
    chunk_size: 6
    rules:
      - {agent: analyst, reply: "analysis of [{last}]"}
      - {agent: asker, after_tool: get_user_choice, reply: "asker chose {response.text}"}
      - {agent: asker, call: {name: get_user_choice, args: {prompt: "Which plan?", options: [basic, pro]}}}
agents:
  - {name: analyst, model: rs/a, description: Analyses anything.}
  - {name: asker, model: rs/b, description: Asks which plan., tools: [{builtin: get_user_choice}]}
models:
  - {id: analyst, agent: analyst}
  - {id: asker, agent: asker}
`;

const frontConfig = (remote) => `
server: {watch_config: false}
log: {level: info, format: json}
providers:
  - name: fs
    type: scripted
    rules:
      - {agent: front, match: transfer, call: {name: transfer_to_agent, args: {agent_name: r_analyst}}}
      - {agent: front, after_tool: t_asker, reply: "front resumed: {response.text}"}
      - {agent: front, call: {name: t_asker, args: {request: "{last}"}}}
agents:
  - {name: front, model: fs/front, description: Front desk., sub_agents: [r_analyst], agent_tools: [t_asker]}
  - {name: r_analyst, description: The remote analyst., endpoint: {a2a: "${remote}/a2a/analyst"}}
  - {name: t_asker, description: The remote asker., endpoint: {a2a: "${remote}/a2a/asker", streaming: false, poll_interval: 20ms}}
models:
  - {id: front, agent: front, route_next_turn: root}
`;

const text = (s) => ({ content: { $case: 'text', value: s } });
const userMsg = (id, s, extra = {}) => ({ message: { messageId: id, role: 'ROLE_USER', parts: [text(s)], ...extra } });
const partText = (parts) => parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

let remote;
let front;

before(async () => {
  remote = new Gateway();
  await remote.build();
  await remote.start(remoteConfig);
  front = new Gateway();
  front.bin = remote.bin;
  front.dir = await mkdtemp(path.join(tmpdir(), 'agentgate-e2e-a2a-'));
  await front.start(frontConfig(remote.origin));
});

after(async () => {
  await front?.stop();
  await remote?.stop();
});

/** The SDK's default client (A2A 1.0) for a model of gw. */
function v1Client(gw, model) {
  // The card's path resolves against the base URL: it needs its slash.
  return new ClientFactory().createFromUrl(`${gw.origin}/a2a/${model}/`);
}

/**
 * The SDK's 0.3 client: the card is served as a 0.3 agent publishes it (no
 * supportedInterfaces), and the SDK's compatibility layer speaks 0.3
 * (message/send, tasks/get, ...). methods records what it called.
 */
function v03Client(gw, model, methods) {
  const legacyCard = async (url, init) => {
    const r = await fetch(url, init);
    if (!String(url).endsWith('agent-card.json')) return r;
    const card = await r.json();
    delete card.supportedInterfaces;
    return new Response(JSON.stringify(card), { status: r.status, headers: { 'content-type': 'application/json' } });
  };
  const spy = async (url, init) => {
    if (init?.body) methods.push(JSON.parse(init.body).method);
    return fetch(url, init);
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl: spy, legacyCompat: { enabled: true } })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: legacyCard, legacyCompat: { enabled: true } }),
    }),
  );
  return factory.createFromUrl(`${gw.origin}/a2a/${model}/`);
}

const clients = {
  '1.0': (gw, model) => v1Client(gw, model),
  '0.3': (gw, model, methods = []) => v03Client(gw, model, methods),
};

for (const [version, make] of Object.entries(clients)) {
  describe(`A2A ${version} through @a2a-js/sdk`, () => {
    test('message/send, a second message in the same context, tasks/get', async () => {
      const methods = [];
      const c = await make(remote, 'analyst', methods);
      const t = await c.sendMessage(userMsg(`s1-${version}`, 'hello sdk'));
      assert.equal(t.status.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(partText(t.artifacts[0].parts), 'analysis of [hello sdk]');
      assert.match(t.id, /^e-/);
      const t2 = await c.sendMessage(userMsg(`s2-${version}`, 'and again', { contextId: t.contextId }));
      assert.equal(t2.contextId, t.contextId, 'the context (our session) continues');
      assert.equal(partText(t2.artifacts[0].parts), 'analysis of [and again]');
      const got = await c.getTask({ id: t.id });
      assert.equal(got.status.state, TaskState.TASK_STATE_COMPLETED);
      if (version === '0.3') assert.deepEqual(methods, ['message/send', 'message/send', 'tasks/get']);
    });

    test('message/stream: the task, text deltas, the final status', async () => {
      const c = await make(remote, 'analyst');
      const kinds = [];
      let streamed = '';
      let last;
      for await (const ev of c.sendMessageStream(userMsg(`st-${version}`, 'stream me please'))) {
        kinds.push(ev.payload.$case);
        if (ev.payload.$case === 'artifactUpdate') streamed += partText(ev.payload.value.artifact.parts);
        last = ev.payload;
      }
      assert.equal(kinds[0], 'task');
      assert.ok(kinds.filter((k) => k === 'artifactUpdate').length > 1, `several deltas: ${kinds}`);
      assert.equal(streamed, 'analysis of [stream me please]');
      assert.equal(last.$case, 'statusUpdate');
      assert.equal(last.value.status.state, TaskState.TASK_STATE_COMPLETED);
    });

    test('input-required, answered with the task id, completes the same task', async () => {
      const c = await make(remote, 'asker');
      const t = await c.sendMessage(userMsg(`q1-${version}`, 'help me choose'));
      assert.equal(t.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.equal(partText(t.status.message.parts), 'Which plan? Options: basic, pro.');
      const done = await c.sendMessage(userMsg(`q2-${version}`, 'pro', { taskId: t.id, contextId: t.contextId }));
      assert.equal(done.id, t.id);
      assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(partText(done.artifacts[0].parts), 'asker chose pro');
      await assert.rejects(c.cancelTask({ id: t.id }), TaskNotCancelableError);
      await assert.rejects(c.getTask({ id: 'e-no-such-task' }), TaskNotFoundError);
    });

    test('two hops: the front delegates to the remote over A2A', async () => {
      const c = await make(front, 'front');
      const moved = await c.sendMessage(userMsg(`f1-${version}`, 'please transfer'));
      assert.equal(partText(moved.artifacts[0].parts), 'analysis of [please transfer]');
      // The remote asks; the front's task waits with the remote's question;
      // the SDK's answer goes through the front to the same remote task.
      const t = await c.sendMessage(userMsg(`f2-${version}`, 'which plan do I need'));
      assert.equal(t.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.equal(partText(t.status.message.parts), 'Which plan? Options: basic, pro.');
      const done = await c.sendMessage(userMsg(`f3-${version}`, 'basic', { taskId: t.id, contextId: t.contextId }));
      assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(partText(done.artifacts.at(-1).parts), 'front resumed: asker chose basic');
    });
  });
}
