// The Responses API (/v1/responses) through the clients that default to it,
// unchanged: the openai package (responses.create, responses.stream,
// responses.retrieve with stream: true, responses.cancel), the Vercel AI
// SDK's default provider openai(model) (generateText, streamText, a tool
// round trip) and the OpenAI Agents SDK (run, a streamed run, a function
// tool). The upstream is the demo config's scripted model.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool as aiTool } from 'ai';
import { Agent, OpenAIProvider, Runner, tool as agentTool } from '@openai/agents';
import { z } from 'zod';
import { gw, MODEL, COORDINATOR_REPLY, GREETER_REPLY, summaryReply, WEATHER_PREFIX, TOOL_CALL_ID, LONG_TASK } from './lib/context.mjs';

function client() {
  return new OpenAI({ baseURL: gw.baseURL, apiKey: 'not-checked', maxRetries: 0, timeout: 15_000 });
}

/** The sequence numbers of a stream's events run 0, 1, 2, ... from first. */
function assertSequence(events, first = 0) {
  assert.ok(events.length > 0, 'events');
  events.forEach((e, i) => assert.equal(e.sequence_number, first + i, `event ${i} (${e.type}) sequence_number`));
}

describe('Responses API: openai package', () => {
  test('responses.create: the tree answers, attributed; previous_response_id continues', async () => {
    const openai = client();
    const r = await openai.responses.create({ model: MODEL, input: 'hello there' });
    assert.equal(r.status, 'completed');
    assert.equal(r.output_text, GREETER_REPLY);
    assert.equal(r.output[0].agentgate.author, 'greeter');
    assert.equal(r.output[0].agentgate.transferred_from, 'coordinator');
    assert.deepEqual(r.agentgate.transfers, [{ from: 'coordinator', to: 'greeter' }]);
    assert.ok(r.usage.total_tokens > 0);
    const next = await openai.responses.create({ model: MODEL, input: 'please summarize the weekly report', previous_response_id: r.id });
    assert.equal(next.agentgate.session_id, r.agentgate.session_id, 'one conversation');
    assert.equal(next.previous_response_id, r.id);
    const got = await openai.responses.retrieve(r.id);
    assert.equal(got.output_text, r.output_text);
    const items = await openai.responses.inputItems.list(r.id);
    assert.equal(items.data.length, 1);
    await openai.responses.delete(r.id);
    await assert.rejects(openai.responses.retrieve(r.id), (err) => err instanceof OpenAI.NotFoundError);
  });

  test('responses.stream: events in order, numbered, and the final response', async () => {
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
  });

  test('background: retrieve with stream: true replays, cancel stops a long run', async () => {
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
  });

  test('errors: unknown model 404, unknown previous_response_id 400, in OpenAI\'s envelope', async () => {
    const openai = client();
    await assert.rejects(openai.responses.create({ model: 'nope', input: 'x' }), (err) => err.status === 404 && err.code === 'model_not_found');
    await assert.rejects(
      openai.responses.create({ model: MODEL, input: 'x', previous_response_id: 'resp_unknown' }),
      (err) => err.status === 400 && err.param === 'previous_response_id',
    );
  });
});

describe('Responses API: Vercel AI SDK default provider openai(model)', () => {
  // Made in each test: the gateway's address is known once it started.
  const provider = () => createOpenAI({ baseURL: gw.baseURL, apiKey: 'not-checked' });
  const weatherTool = (execute) =>
    aiTool({
      description: 'Current weather at a location, looked up by the client.',
      inputSchema: jsonSchema({ type: 'object', properties: { location: { type: 'string' } }, required: ['location'] }),
      execute,
    });

  test('generateText', async () => {
    const r = await generateText({ model: provider()(MODEL), prompt: 'hello', maxRetries: 0 });
    assert.equal(r.text, GREETER_REPLY);
    assert.equal(r.finishReason, 'stop');
    assert.ok(r.usage.totalTokens > 0);
  });

  test('streamText: the streamed text is generateText\'s', async () => {
    const r = streamText({ model: provider()(MODEL), prompt: 'please summarize the quarterly plan', maxRetries: 0 });
    let text = '';
    for await (const t of r.textStream) text += t;
    assert.equal(text, summaryReply('please summarize the quarterly plan'));
    assert.equal(await r.finishReason, 'stop');
  });

  test('a client tool round trip with execute and stopWhen', async () => {
    const calls = [];
    const r = await generateText({
      model: provider()(MODEL),
      prompt: 'What is the weather in Lisbon?',
      tools: { get_weather: weatherTool(async (input, { toolCallId }) => (calls.push({ input, toolCallId }), 'sunny, 24 C')) },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    assert.equal(calls.length, 1);
    assert.match(calls[0].toolCallId, TOOL_CALL_ID);
    assert.equal(r.steps.length, 2);
    assert.ok(r.text.startsWith(WEATHER_PREFIX), r.text);
    assert.ok(r.text.includes('sunny, 24 C'), r.text);
  });
});

describe('Responses API: OpenAI Agents SDK', () => {
  const runner = {
    run: (...args) =>
      new Runner({ modelProvider: new OpenAIProvider({ openAIClient: client(), useResponses: true }), tracingDisabled: true }).run(...args),
  };

  test('run', async () => {
    const agent = new Agent({ name: 'desk client', instructions: 'Be brief.', model: MODEL });
    const result = await runner.run(agent, 'hello');
    assert.equal(result.finalOutput, GREETER_REPLY);
  });

  test('a streamed run', async () => {
    const agent = new Agent({ name: 'desk client', model: MODEL });
    const result = await runner.run(agent, 'who are you?', { stream: true });
    let text = '';
    for await (const chunk of result.toTextStream()) text += chunk;
    await result.completed;
    assert.equal(text, COORDINATOR_REPLY);
    assert.equal(result.finalOutput, COORDINATOR_REPLY);
  });

  test('a function tool', async () => {
    const seen = [];
    const getWeather = agentTool({
      name: 'get_weather',
      description: 'Current weather at a location, looked up by the client.',
      parameters: z.object({ location: z.string() }),
      execute: async ({ location }) => (seen.push(location), 'rainy, 12 C'),
    });
    const agent = new Agent({ name: 'desk client', model: MODEL, tools: [getWeather] });
    const result = await runner.run(agent, 'What is the weather in Rome?');
    assert.equal(seen.length, 1);
    assert.ok(result.finalOutput.startsWith(WEATHER_PREFIX), result.finalOutput);
    assert.ok(result.finalOutput.includes('rainy, 12 C'), result.finalOutput);
  });
});
