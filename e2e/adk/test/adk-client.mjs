// ADK's own JavaScript client against the gateway: AdkApiClient, the class
// @google/adk-devtools ships for talking to an ADK API server
// (dist/esm/server/adk_api_client.js), and @google/adk's event helpers to
// read what it yields.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AdkApiClient } from '@google/adk-devtools';
import { createEvent, getFunctionCalls, getFunctionResponses, isFinalResponse, stringifyContent } from '@google/adk';
import { gw, APP, GREETER_REPLY, summarizerReply, summaryReply, uniqueId } from './lib/context.mjs';

const client = () => new AdkApiClient({ backendUrl: gw.origin });

/** Every event runAsync yields, as ADK Events (createEvent keeps the wire fields and fills ADK's defaults). */
async function run(c, params) {
  const events = [];
  for await (const wire of c.runAsync({ appName: APP, ...params })) {
    events.push({ wire, event: createEvent(wire) });
  }
  return events;
}

const text = ({ event }) => stringifyContent(event);

/** The common shape of every event of one run: one invocation, unique ids, ADK Python's float-second timestamps. */
function assertOneInvocation(events) {
  assert.ok(events.length > 0, 'the run yielded no event');
  const inv = events[0].wire.invocationId;
  assert.match(inv, /^e-[0-9a-f-]{36}$/, 'invocationId looks like ADK\'s "e-<uuid>"');
  const ids = new Set();
  for (const { wire } of events) {
    assert.equal(wire.invocationId, inv, 'every event of the turn carries the same invocationId');
    assert.equal(typeof wire.id, 'string');
    assert.ok(!ids.has(wire.id), `event id ${wire.id} repeated`);
    ids.add(wire.id);
    assert.equal(typeof wire.timestamp, 'number');
    assert.ok(wire.timestamp > 1e9 && wire.timestamp < 1e11, `timestamp ${wire.timestamp} is not epoch seconds`);
    assert.deepEqual(
      Object.keys(wire.actions)
        .filter((k) => ['stateDelta', 'artifactDelta'].includes(k))
        .sort(),
      ['artifactDelta', 'stateDelta'],
      "actions carries ADK's stateDelta and artifactDelta maps",
    );
    assert.ok(Array.isArray(wire.longRunningToolIds));
  }
  return inv;
}

/**
 * A streamed model turn by author: at least two partial events whose text
 * deltas add up to the full text, then exactly one non-partial event holding
 * the whole text (which adk-web puts in place of the partials).
 */
function assertStreamedText(events, author, full) {
  const mine = events.filter(({ wire }) => wire.author === author && text({ event: createEvent(wire) }) !== '');
  const partials = mine.filter(({ wire }) => wire.partial === true);
  const finals = mine.filter(({ wire }) => wire.partial !== true);
  assert.ok(partials.length >= 2, `${author}: expected several partial events, got ${partials.length}`);
  assert.equal(partials.map(text).join(''), full, `${author}: the partial deltas add up to the full text`);
  assert.equal(finals.length, 1, `${author}: exactly one non-partial text event`);
  assert.equal(text(finals[0]), full);
  assert.ok(
    events.indexOf(finals[0]) > events.indexOf(partials.at(-1)),
    `${author}: the non-partial event comes after the partials`,
  );
  for (const p of partials) assert.equal(isFinalResponse(p.event), false, 'a partial event is not a final response');
  return finals[0];
}

export function adkClientSuite() {
  describe("ADK's JavaScript client (AdkApiClient of @google/adk-devtools)", () => {
    test('listApps lists the demo app', async () => {
      const apps = await client().listApps();
      assert.ok(Array.isArray(apps), 'list-apps is a bare array of names');
      assert.ok(apps.includes(APP), `apps: ${JSON.stringify(apps)}`);
    });

    test('a transfer turn: create, run_sse streaming, get, list, delete', async () => {
      const c = client();
      const userId = uniqueId('user');
      const session = await c.createSession({ appName: APP, userId, state: { lang: 'en' } });
      assert.equal(session.appName, APP);
      assert.equal(session.userId, userId);
      assert.match(session.id, /\S/);
      assert.deepEqual(session.state, { lang: 'en' });
      assert.deepEqual(session.events, []);

      const events = await run(c, { userId, sessionId: session.id, streaming: true, newMessage: 'hello' });
      const inv = assertOneInvocation(events);
      assert.deepEqual(
        [...new Set(events.map(({ wire }) => wire.author))],
        ['coordinator', 'greeter'],
        'the coordinator speaks, then the greeter',
      );

      // The coordinator calls transfer_to_agent; its response event carries the transfer.
      const [call, response] = events;
      assert.equal(call.wire.author, 'coordinator');
      assert.ok(!call.wire.partial);
      const calls = getFunctionCalls(call.event);
      assert.equal(calls.length, 1);
      assert.equal(calls[0].name, 'transfer_to_agent');
      assert.deepEqual(calls[0].args, { agent_name: 'greeter' });
      assert.equal(response.wire.author, 'coordinator');
      const responses = getFunctionResponses(response.event);
      assert.equal(responses.length, 1);
      assert.equal(responses[0].name, 'transfer_to_agent');
      assert.equal(responses[0].id, calls[0].id, 'the response answers the call by id');
      assert.equal(response.event.actions.transferToAgent, 'greeter');
      assert.equal(response.wire.content.role, 'user', 'a function response has role user, as in ADK');

      // The greeter streams its answer.
      const final = assertStreamedText(events, 'greeter', GREETER_REPLY);
      assert.equal(events.at(-1), final, 'the stream ends with the final greeting');
      assert.deepEqual(
        events.map(({ event }) => isFinalResponse(event)),
        events.map((e) => e === final),
        'isFinalResponse (ADK) is true for the last event only',
      );

      // The session holds the turn: the user's message and the non-partial events, by the same ids.
      const got = await c.getSession({ appName: APP, userId, sessionId: session.id });
      assert.equal(got.id, session.id);
      assert.deepEqual(
        got.events.map((e) => e.author),
        ['user', 'coordinator', 'coordinator', 'greeter'],
      );
      assert.ok(
        got.events.every((e) => !e.partial),
        'partial events are never persisted',
      );
      assert.ok(
        got.events.every((e) => e.invocationId === inv),
        'the persisted events carry the invocationId',
      );
      assert.deepEqual(
        got.events.slice(1).map((e) => e.id),
        events.filter(({ wire }) => !wire.partial).map(({ wire }) => wire.id),
        'persisted events keep the ids they were streamed with',
      );
      assert.equal(stringifyContent(createEvent(got.events[0])), 'hello');
      assert.equal(stringifyContent(createEvent(got.events[3])), GREETER_REPLY);
      assert.equal(got.events[2].actions.transferToAgent, 'greeter');
      assert.deepEqual(got.state, { lang: 'en' });
      assert.equal(got.lastUpdateTime, got.events.at(-1).timestamp);

      const listed = await c.listSessions({ appName: APP, userId });
      assert.deepEqual(
        listed.map((s) => s.id),
        [session.id],
      );
      const all = await c.listAllSessions({ userId });
      assert.deepEqual(
        all.map((s) => s.id),
        [session.id],
        'listAllSessions (every app) finds it too',
      );

      // DELETE answers 200 `null`, which the client's response.json() accepts.
      assert.equal(await c.deleteSession({ appName: APP, userId, sessionId: session.id }), null);
      await assert.rejects(c.getSession({ appName: APP, userId, sessionId: session.id }), {
        message: `Session not found: ${session.id}`,
      });
      assert.deepEqual(await c.listSessions({ appName: APP, userId }), []);
    });

    test("an agent called as a tool: summarize streams the coordinator's reply; the sub-conversation is a session", async () => {
      const c = client();
      const userId = uniqueId('user');
      const { id } = await c.createSession({ appName: APP, userId });
      const request = 'summarize the release notes: the build is green and we ship on Friday';
      const events = await run(c, { userId, sessionId: id, streaming: true, newMessage: request });
      assertOneInvocation(events);
      assert.ok(
        events.every(({ wire }) => wire.author === 'coordinator'),
        "the agent tool's own events are not streamed",
      );

      const [call, response] = events;
      const calls = getFunctionCalls(call.event);
      assert.deepEqual(
        calls.map(({ name, args }) => ({ name, args })),
        [{ name: 'summarizer', args: { request } }],
      );
      const responses = getFunctionResponses(response.event);
      assert.equal(responses.length, 1);
      assert.equal(responses[0].name, 'summarizer');
      assert.equal(responses[0].id, calls[0].id);
      // docs/native-api.md: agentgate answers {"text": ...} where ADK answers {"result": ...}.
      assert.equal(responses[0].response.text, summarizerReply(request));
      assertStreamedText(events, 'coordinator', summaryReply(request));
      assert.ok(isFinalResponse(events.at(-1).event));

      // agentgate's extension: the summarizer's own conversation, read with the same client.
      const parent = await c.getSession({ appName: APP, userId, sessionId: id });
      assert.deepEqual(parent.subSessions, [`${id}/summarizer`]);
      const sub = await c.getSession({ appName: APP, userId, sessionId: encodeURIComponent(`${id}/summarizer`) });
      assert.deepEqual(
        sub.events.map((e) => [e.author, stringifyContent(createEvent(e))]),
        [
          ['user', request],
          ['summarizer', summarizerReply(request)],
        ],
      );
      await c.deleteSession({ appName: APP, userId, sessionId: id });
    });

    test('streaming: false yields no partial events and the same turn', async () => {
      const c = client();
      const userId = uniqueId('user');
      const { id } = await c.createSession({ appName: APP, userId });
      const events = await run(c, { userId, sessionId: id, streaming: false, newMessage: 'hello' });
      assertOneInvocation(events);
      assert.ok(
        events.every(({ wire }) => !wire.partial),
        'no partial event without streaming',
      );
      assert.deepEqual(
        events.map(({ wire }) => wire.author),
        ['coordinator', 'coordinator', 'greeter'],
      );
      assert.equal(text(events[2]), GREETER_REPLY);
      await c.deleteSession({ appName: APP, userId, sessionId: id });
    });

    test('a second turn in the same session starts at the coordinator again, with a new invocationId', async () => {
      const c = client();
      const userId = uniqueId('user');
      const { id } = await c.createSession({ appName: APP, userId });
      const first = await run(c, { userId, sessionId: id, streaming: true, newMessage: 'hello' });
      const second = await run(c, { userId, sessionId: id, streaming: true, newMessage: 'hi again' });
      const inv1 = assertOneInvocation(first);
      const inv2 = assertOneInvocation(second);
      assert.notEqual(inv1, inv2);
      assert.equal(second[0].wire.author, 'coordinator');
      assert.equal(second[1].event.actions.transferToAgent, 'greeter');
      const got = await c.getSession({ appName: APP, userId, sessionId: id });
      assert.equal(got.events.length, 8);
      assert.deepEqual([...new Set(got.events.map((e) => e.invocationId))], [inv1, inv2]);
      await c.deleteSession({ appName: APP, userId, sessionId: id });
    });

    test('errors reach the client as its Error messages', async () => {
      const c = client();
      const userId = uniqueId('user');
      const missing = uniqueId('missing');
      // runAsync reads {"error": ...} of a non-2xx answer.
      await assert.rejects(
        (async () => {
          for await (const _ of c.runAsync({
            appName: APP,
            userId,
            sessionId: missing,
            streaming: true,
            newMessage: 'hello',
          }));
        })(),
        { message: `Session not found: ${missing}` },
      );
      await assert.rejects(c.deleteSession({ appName: APP, userId, sessionId: missing }), {
        message: `Session not found: ${missing}`,
      });
      await assert.rejects(c.getSession({ appName: 'no-such-app', userId, sessionId: missing }), /no-such-app/);
    });

    test('createSession with a chosen sessionId (POST .../sessions/{id}); a duplicate is refused', async () => {
      const c = client();
      const userId = uniqueId('user');
      const sessionId = uniqueId('chosen');
      const s = await c.createSession({ appName: APP, userId, sessionId });
      assert.equal(s.id, sessionId);
      assert.deepEqual(s.state, {});
      await assert.rejects(c.createSession({ appName: APP, userId, sessionId }), {
        message: `Session already exists: ${sessionId}`,
      });
      await c.deleteSession({ appName: APP, userId, sessionId });
    });

    test(
      'createSession with a chosen sessionId and a state keeps that state',
      async () => {
        const c = client();
        const userId = uniqueId('user');
        const sessionId = uniqueId('chosen');
        try {
          const s = await c.createSession({ appName: APP, userId, sessionId, state: { lang: 'fr' } });
          assert.deepEqual(s.state, { lang: 'fr' });
        } finally {
          await c.deleteSession({ appName: APP, userId, sessionId }).catch(() => {});
        }
      },
    );
  });
}
