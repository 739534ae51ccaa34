// The Responses API (/v1/responses) through the clients that default to it,
// unchanged: the openai package (responses.create, responses.stream,
// responses.retrieve with stream: true, responses.cancel), the Vercel AI
// SDK's default provider openai(model) (generateText, streamText, a tool
// round trip) and the OpenAI Agents SDK (run, a streamed run, a function
// tool). Each test asserts on what the client got and on what the desk's
// models were sent (the recording upstream), and every response and stream
// a client got is checked against the Open Responses specification
// (gw.checks, after each test).
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool as aiTool } from 'ai';
import { Agent, OpenAIProvider, Runner, tool as agentTool } from '@openai/agents';
import { z } from 'zod';
import { systemText, transcript } from '../../testing/node/upstream.mjs';
import {
  gw,
  MODEL,
  INSTRUCTIONS,
  COORDINATOR_REPLY,
  GREETER_REPLY,
  summary,
  summaryReply,
  WEATHER_PREFIX,
  TOOL_CALL_ID,
  LONG_TASK,
  taskReply,
} from './lib/context.mjs';

function client() {
  return new OpenAI({ baseURL: gw.baseURL, apiKey: 'not-checked', maxRetries: 0, timeout: 15_000, fetch: gw.checks.fetch });
}

/** The sequence numbers of a stream's events run 0, 1, 2, ... from first. */
function assertSequence(events, first = 0) {
  assert.ok(events.length > 0, 'events');
  events.forEach((e, i) => assert.equal(e.sequence_number, first + i, `event ${i} (${e.type}) sequence_number`));
}

/** What an agent that received a transfer from the coordinator sees of it, after the user's words. */
const transferNotes = (to) => [
  ['user', `For context:\n[coordinator] called tool \`transfer_to_agent\` with parameters: {"agent_name":"${to}"}`],
  ['user', 'For context:\n[coordinator] `transfer_to_agent` tool returned result: {"result":null}'],
];

/** Which agents' models were called, in order. */
const models = (calls) => calls.map((c) => c.model);

/** The client tool's result as the model sees it in the tool message. */
const toolResult = (text) => JSON.stringify({ result: text });

/** The coordinator's call that answers a client's weather result, and what the client got. */
function assertWeatherRoundTrip(calls, question, result, answer) {
  assert.deepEqual(models(calls), ['coordinator', 'coordinator']);
  assert.deepEqual(transcript(calls[0].body), [['user', question]]);
  assert.ok(calls[0].body.tools.some((t) => t.function.name === 'get_weather'), 'the client tool is offered to the model');
  // The second call: the history as the gateway keeps it, the client's
  // result once, under the call id the model gave.
  const [, second] = calls;
  assert.deepEqual(transcript(second.body), [
    ['user', question],
    ['assistant', `get_weather(${JSON.stringify({ location: question })})`],
    ['tool', toolResult(result)],
  ]);
  const [call] = second.body.messages.at(-2).tool_calls;
  assert.equal(second.body.messages.at(-1).tool_call_id, call.id);
  assert.equal(answer, `${WEATHER_PREFIX}${toolResult(result)}`);
}

describe('Responses API: openai package', () => {
  afterEach(() => gw.checks.verify());

  test('responses.create: the tree answers, attributed; previous_response_id continues', async () => {
    const openai = client();
    const checked = gw.checks.checked;
    let rec = gw.upstream.record();
    const r = await openai.responses.create({ model: MODEL, input: 'hello there' });
    assert.equal(r.status, 'completed');
    assert.equal(r.output_text, GREETER_REPLY);
    assert.equal(r.output[0].agentgate.author, 'greeter');
    assert.equal(r.output[0].agentgate.transferred_from, 'coordinator');
    assert.deepEqual(r.agentgate.transfers, [{ from: 'coordinator', to: 'greeter' }]);
    assert.ok(r.usage.total_tokens > 0);
    // The coordinator was asked, then the greeter it transferred to.
    let calls = rec.calls;
    assert.deepEqual(models(calls), ['coordinator', 'greeter']);
    assert.ok(systemText(calls[0].body).startsWith(INSTRUCTIONS.coordinator));
    assert.deepEqual(transcript(calls[0].body), [['user', 'hello there']]);
    assert.deepEqual(transcript(calls[1].body), [['user', 'hello there'], ...transferNotes('greeter')]);
    assert.ok(systemText(calls[1].body).startsWith(INSTRUCTIONS.greeter));
    assert.ok(calls.every((c) => !c.body.stream), 'a response that is not streamed does not stream its model calls');

    // The next turn: the stored history once, then the new input only.
    rec = gw.upstream.record();
    const request = 'please summarize the weekly report';
    const next = await openai.responses.create({ model: MODEL, input: request, previous_response_id: r.id });
    assert.equal(next.agentgate.session_id, r.agentgate.session_id, 'one conversation');
    assert.equal(next.previous_response_id, r.id);
    assert.equal(next.output_text, summaryReply(request));
    calls = rec.calls;
    assert.deepEqual(models(calls), ['coordinator', 'summarizer', 'coordinator']);
    const history = [
      ['user', 'hello there'],
      ['assistant', 'transfer_to_agent({"agent_name":"greeter"})'],
      ['tool', '{"result":null}'],
      ['user', `For context:\n[greeter] said: ${GREETER_REPLY}`],
      ['user', request],
    ];
    assert.deepEqual(transcript(calls[0].body), history);
    assert.deepEqual(transcript(calls[1].body), [['user', request]], 'the agent tool runs in a sub-conversation of its own');
    assert.deepEqual(transcript(calls[2].body), [
      ...history,
      ['assistant', `summarizer(${JSON.stringify({ request })})`],
      ['tool', JSON.stringify({ text: summary(request) })],
    ]);

    const got = await openai.responses.retrieve(r.id);
    assert.equal(got.output_text, r.output_text);
    const items = await openai.responses.inputItems.list(r.id);
    assert.equal(items.data.length, 1);
    await openai.responses.delete(r.id);
    await assert.rejects(openai.responses.retrieve(r.id), (err) => err instanceof OpenAI.NotFoundError);
    await gw.checks.verify();
    assert.equal(gw.checks.checked - checked, 3, 'two responses created and one retrieved, each checked');
  });

  test('responses.stream: events in order, numbered, and the final response', async () => {
    const rec = gw.upstream.record();
    const events = [];
    const stream = client().responses.stream({ model: MODEL, input: 'hello' });
    let text = '';
    stream.on('response.output_text.delta', (e) => (text += e.delta));
    for await (const e of stream) events.push(e);
    const final = await stream.finalResponse();
    assertSequence(events);
    assert.equal(events[0].type, 'response.created');
    assert.equal(events.at(-1).type, 'response.completed');
    assert.equal(text, GREETER_REPLY);
    assert.equal(final.output_text, GREETER_REPLY);
    // A streamed response streams its model calls, and asks for their usage.
    assert.deepEqual(models(rec.calls), ['coordinator', 'greeter']);
    for (const c of rec.calls) {
      assert.equal(c.body.stream, true);
      assert.deepEqual(c.body.stream_options, { include_usage: true });
    }
    assert.deepEqual(transcript(rec.calls[1].body), [['user', 'hello'], ...transferNotes('greeter')]);
  });

  test('background: retrieve with stream: true replays, cancel stops a long run and its model call', async () => {
    const openai = client();
    const done = await openai.responses.create({ model: MODEL, input: 'hello', background: true });
    assert.ok(['queued', 'in_progress'].includes(done.status), done.status);
    const replay = [];
    for await (const e of await openai.responses.retrieve(done.id, { stream: true })) replay.push(e);
    assertSequence(replay);
    assert.equal(replay.at(-1).type, 'response.completed');
    assert.equal(replay.at(-1).response.output_text ?? (await openai.responses.retrieve(done.id)).output_text, GREETER_REPLY);
    const after = [];
    for await (const e of await openai.responses.retrieve(done.id, { stream: true, starting_after: 2 })) after.push(e);
    assertSequence(after, 3);
    assert.deepEqual(after, replay.slice(3), 'the same events after the cursor');

    const rec = gw.upstream.record();
    const long = await openai.responses.create({ model: MODEL, input: LONG_TASK, background: true });
    const attached = await openai.responses.retrieve(long.id, { stream: true });
    const seen = [];
    for await (const e of attached) {
      seen.push(e);
      if (e.type === 'response.output_text.delta' && seen.filter((x) => x.type === 'response.output_text.delta').length === 3) {
        const cancelled = await openai.responses.cancel(long.id);
        assert.equal(cancelled.status, 'cancelled');
      }
    }
    assert.equal(seen.at(-1).type, 'response.failed');
    assert.equal(seen.at(-1).response.status, 'cancelled');
    assert.equal((await openai.responses.retrieve(long.id)).status, 'cancelled');
    // The task executor's model call was under way; the cancel aborted it.
    const task = rec.calls.find((c) => c.model === 'task_executor');
    assert.ok(task, `model calls: ${models(rec.calls)}`);
    await task.ended;
    assert.equal(task.aborted, true, 'the upstream saw its connection closed before the answer ended');
    assert.deepEqual(transcript(task.body), [['user', LONG_TASK], ...transferNotes('task_executor')]);
  });

  test('errors: unknown model 404, unknown previous_response_id 400, in OpenAI\'s envelope; no model called', async () => {
    const rec = gw.upstream.record();
    const openai = client();
    await assert.rejects(openai.responses.create({ model: 'nope', input: 'x' }), (err) => err.status === 404 && err.code === 'model_not_found');
    await assert.rejects(
      openai.responses.create({ model: MODEL, input: 'x', previous_response_id: 'resp_unknown' }),
      (err) => err.status === 400 && err.param === 'previous_response_id',
    );
    assert.deepEqual(rec.calls, []);
  });
});

describe('Responses API: Vercel AI SDK default provider openai(model)', () => {
  afterEach(() => gw.checks.verify());
  // Made in each test: the gateway's address is known once it started.
  const provider = () => createOpenAI({ baseURL: gw.baseURL, apiKey: 'not-checked', fetch: gw.checks.fetch });
  const weatherTool = (execute) =>
    aiTool({
      description: 'Current weather at a location, looked up by the client.',
      inputSchema: jsonSchema({ type: 'object', properties: { location: { type: 'string' } }, required: ['location'] }),
      execute,
    });

  test('generateText', async () => {
    const rec = gw.upstream.record();
    const r = await generateText({ model: provider()(MODEL), prompt: 'hello', maxRetries: 0 });
    assert.equal(r.text, GREETER_REPLY);
    assert.equal(r.finishReason, 'stop');
    assert.ok(r.usage.totalTokens > 0);
    assert.deepEqual(models(rec.calls), ['coordinator', 'greeter']);
    assert.deepEqual(transcript(rec.calls[0].body), [['user', 'hello']]);
  });

  test('streamText: the streamed text is generateText\'s', async () => {
    const rec = gw.upstream.record();
    const request = 'please summarize the quarterly plan';
    const r = streamText({ model: provider()(MODEL), prompt: request, maxRetries: 0 });
    let text = '';
    for await (const t of r.textStream) text += t;
    assert.equal(text, summaryReply(request));
    assert.equal(await r.finishReason, 'stop');
    assert.deepEqual(models(rec.calls), ['coordinator', 'summarizer', 'coordinator']);
    // The coordinator's calls stream; the agent tool's answer is a tool
    // result, which nobody streams.
    assert.deepEqual(rec.calls.map((c) => c.body.stream === true), [true, false, true]);
    assert.deepEqual(transcript(rec.calls[1].body), [['user', request]]);
  });

  test('a client tool round trip with execute and stopWhen', async () => {
    const rec = gw.upstream.record();
    const calls = [];
    const question = 'What is the weather in Lisbon?';
    const r = await generateText({
      model: provider()(MODEL),
      prompt: question,
      tools: { get_weather: weatherTool(async (input, { toolCallId }) => (calls.push({ input, toolCallId }), 'sunny, 24 C')) },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    assert.equal(calls.length, 1);
    assert.match(calls[0].toolCallId, TOOL_CALL_ID);
    assert.deepEqual(calls[0].input, { location: question });
    assert.equal(r.steps.length, 2);
    // The second step sends item_references and the function_call_output;
    // the model gets the result once, answering the call it made.
    assertWeatherRoundTrip(rec.calls, question, 'sunny, 24 C', r.text);
  });
});

describe('Responses API: OpenAI Agents SDK', () => {
  afterEach(() => gw.checks.verify());
  const runner = {
    run: (...args) =>
      new Runner({ modelProvider: new OpenAIProvider({ openAIClient: client(), useResponses: true }), tracingDisabled: true }).run(...args),
  };

  test('run: the agent\'s instructions reach the root agent only (client_instructions: append)', async () => {
    const rec = gw.upstream.record();
    const agent = new Agent({ name: 'desk client', instructions: 'Be brief.', model: MODEL });
    const result = await runner.run(agent, 'hello');
    assert.equal(result.finalOutput, GREETER_REPLY);
    assert.deepEqual(models(rec.calls), ['coordinator', 'greeter']);
    assert.ok(systemText(rec.calls[0].body).startsWith(`${INSTRUCTIONS.coordinator}\n\nBe brief.\n\n`), systemText(rec.calls[0].body));
    assert.ok(!systemText(rec.calls[1].body).includes('Be brief.'), 'not the greeter\'s');
    assert.deepEqual(transcript(rec.calls[0].body), [['user', 'hello']]);
  });

  test('a streamed run', async () => {
    const rec = gw.upstream.record();
    const agent = new Agent({ name: 'desk client', model: MODEL });
    const result = await runner.run(agent, 'who are you?', { stream: true });
    let text = '';
    for await (const chunk of result.toTextStream()) text += chunk;
    await result.completed;
    assert.equal(text, COORDINATOR_REPLY);
    assert.equal(result.finalOutput, COORDINATOR_REPLY);
    assert.deepEqual(models(rec.calls), ['coordinator']);
    assert.equal(rec.calls[0].body.stream, true);
    assert.deepEqual(transcript(rec.calls[0].body), [['user', 'who are you?']]);
    assert.ok(systemText(rec.calls[0].body).startsWith(`${INSTRUCTIONS.coordinator}\n\nYou can hand`), 'no instructions appended');
  });

  test('a function tool', async () => {
    const rec = gw.upstream.record();
    const seen = [];
    const getWeather = agentTool({
      name: 'get_weather',
      description: 'Current weather at a location, looked up by the client.',
      parameters: z.object({ location: z.string() }),
      execute: async ({ location }) => (seen.push(location), 'rainy, 12 C'),
    });
    const question = 'What is the weather in Rome?';
    const agent = new Agent({ name: 'desk client', model: MODEL, tools: [getWeather] });
    const result = await runner.run(agent, question);
    assert.deepEqual(seen, [question]);
    // The SDK resends the whole item history with store unset: the model
    // still gets the conversation once.
    assertWeatherRoundTrip(rec.calls, question, 'rainy, 12 C', result.finalOutput);
  });

  test('a task handed to the task executor, streamed', async () => {
    const rec = gw.upstream.record();
    const result = await runner.run(new Agent({ name: 'desk client', model: MODEL }), 'please do the dishes', { stream: true });
    let text = '';
    for await (const chunk of result.toTextStream()) text += chunk;
    await result.completed;
    assert.equal(text, taskReply('please do the dishes'));
    assert.deepEqual(models(rec.calls), ['coordinator', 'task_executor']);
    assert.deepEqual(transcript(rec.calls[1].body), [['user', 'please do the dishes'], ...transferNotes('task_executor')]);
  });
});
