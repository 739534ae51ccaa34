// The Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`) against the gateway:
// generateText, streamText, client tools with execute and stopWhen, a manual
// tool round trip, usage, errors, abort.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { APICallError, generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  gw,
  MODEL,
  COORDINATOR_REPLY,
  GREETER_REPLY,
  summaryReply,
  WEATHER_PREFIX,
  TOOL_CALL_ID,
  sessionId,
  LONG_TASK,
} from './lib/context.mjs';

/**
 * Surfaces the gateway's `agentgate` extension as providerMetadata.agentgate:
 * the authors in order, the transfers, the invocation ids.
 */
const agentgateExtractor = {
  async extractMetadata({ parsedBody }) {
    const ext = parsedBody?.agentgate;
    if (!ext) return undefined;
    return {
      agentgate: {
        authors: [ext.author],
        transfers: ext.transfer_to_agent ? [ext.transfer_to_agent] : [],
        invocationIds: [ext.invocation_id],
      },
    };
  },
  createStreamExtractor() {
    const authors = [];
    const transfers = [];
    const invocationIds = new Set();
    let chunks = 0;
    let missing = 0;
    return {
      processChunk(chunk) {
        chunks++;
        const ext = chunk?.agentgate;
        if (!ext) {
          missing++;
          return;
        }
        if (authors.at(-1) !== ext.author) authors.push(ext.author);
        if (ext.transfer_to_agent) transfers.push(ext.transfer_to_agent);
        invocationIds.add(ext.invocation_id);
      },
      buildMetadata() {
        return { agentgate: { authors, transfers, invocationIds: [...invocationIds], chunks, missing } };
      },
    };
  },
};

function provider(settings = {}) {
  return createOpenAICompatible({
    name: 'agentgate',
    baseURL: gw.baseURL,
    apiKey: 'not-checked',
    includeUsage: true,
    metadataExtractor: agentgateExtractor,
    ...settings,
  });
}

const model = (settings) => provider(settings)(MODEL);

/** The AI SDK's schema for the demo's client tool; `execute` is optional. */
function weatherTool(execute) {
  return tool({
    description: 'Current weather at a location, looked up by the client.',
    inputSchema: jsonSchema({
      type: 'object',
      properties: { location: { type: 'string' } },
      required: ['location'],
    }),
    ...(execute ? { execute } : {}),
  });
}

/** Drains fullStream, returning every part by type. */
async function drain(result) {
  const parts = [];
  for await (const part of result.fullStream) parts.push(part);
  const of = (type) => parts.filter((p) => p.type === type);
  return { parts, of };
}

describe('Vercel AI SDK (ai + @ai-sdk/openai-compatible)', () => {
  test('generateText: plain text', async () => {
    const result = await generateText({ model: model(), prompt: 'Who are you?', maxRetries: 0 });
    assert.equal(result.text, COORDINATOR_REPLY);
    assert.equal(result.finishReason, 'stop');
    assert.ok(result.usage.inputTokens > 0);
    assert.ok(result.usage.outputTokens > 0);
    assert.equal(result.usage.totalTokens, result.usage.inputTokens + result.usage.outputTokens);
    assert.equal(result.response.modelId, MODEL);
    assert.ok(result.response.headers['x-request-id']);
    assert.deepEqual(result.providerMetadata.agentgate.authors, ['coordinator']);
  });

  test('streamText: textStream joined equals the final text and generateText\'s', async () => {
    const result = streamText({ model: model(), prompt: 'Who are you?', maxRetries: 0 });
    let joined = '';
    let deltas = 0;
    for await (const delta of result.textStream) {
      joined += delta;
      deltas++;
    }
    assert.ok(deltas > 1, 'several text deltas');
    assert.equal(joined, await result.text);
    assert.equal(joined, COORDINATOR_REPLY);
    assert.equal(await result.finishReason, 'stop');
    const generated = await generateText({ model: model(), prompt: 'Who are you?', maxRetries: 0 });
    assert.equal(joined, generated.text);
  });

  test('streamText: transfer shows in raw chunks and providerMetadata; no error parts', async () => {
    const result = streamText({ model: model(), prompt: 'hello', includeRawChunks: true, maxRetries: 0 });
    const { of } = await drain(result);
    assert.deepEqual(of('error'), []);
    assert.equal(of('text-delta').map((p) => p.text).join(''), GREETER_REPLY);
    assert.equal(await result.finishReason, 'stop');

    const raw = of('raw').map((p) => p.rawValue);
    const transfer = raw.filter((c) => c.agentgate?.transfer_to_agent);
    assert.equal(transfer.length, 1);
    assert.equal(transfer[0].agentgate.transfer_to_agent, 'greeter');
    assert.ok(raw.filter((c) => c.choices?.[0]?.delta?.content).every((c) => c.agentgate.author === 'greeter'));

    const meta = (await result.providerMetadata).agentgate;
    assert.deepEqual(meta.authors, ['coordinator', 'greeter']);
    assert.deepEqual(meta.transfers, ['greeter']);
    assert.equal(meta.invocationIds.length, 1, 'one invocation across the transfer');
    assert.equal(meta.missing, 0, 'every chunk carries the extension');
  });

  test('generateText: agent tool (summarizer) reply; no client tool calls', async () => {
    const prompt = 'summarize: the AI SDK talks to agentgate';
    const result = await generateText({ model: model(), prompt, maxRetries: 0 });
    assert.equal(result.text, summaryReply(prompt));
    assert.deepEqual(result.toolCalls, []);
    assert.equal(result.finishReason, 'stop');

    const streamed = streamText({ model: model(), prompt, maxRetries: 0 });
    assert.equal(await streamed.text, summaryReply(prompt));
    assert.deepEqual((await streamed.providerMetadata).agentgate.authors, ['coordinator']);
  });

  test('usage: includeUsage gives token counts on streamText', async () => {
    const result = streamText({ model: model(), prompt: 'hello', maxRetries: 0 });
    await result.consumeStream();
    const usage = await result.totalUsage;
    assert.ok(usage.inputTokens > 0, `inputTokens ${usage.inputTokens}`);
    assert.ok(usage.outputTokens > 0, `outputTokens ${usage.outputTokens}`);
    assert.equal(usage.totalTokens, usage.inputTokens + usage.outputTokens);
    const generated = await generateText({ model: model(), prompt: 'hello', maxRetries: 0 });
    assert.deepEqual(
      [usage.inputTokens, usage.outputTokens],
      [generated.usage.inputTokens, generated.usage.outputTokens],
      'streamed usage equals non-streamed usage',
    );
  });

  describe('client tool round trip', () => {
    const prompt = 'What is the weather in Lisbon?';

    async function roundTrip(headers) {
      const calls = [];
      const result = streamText({
        model: model(),
        prompt,
        headers,
        maxRetries: 0,
        tools: {
          get_weather: weatherTool(async (input, { toolCallId }) => {
            calls.push({ input, toolCallId });
            return 'sunny, 24 C';
          }),
        },
        stopWhen: stepCountIs(3),
      });
      const { of } = await drain(result);
      assert.deepEqual(of('error'), []);
      assert.deepEqual(of('tool-error'), []);
      const steps = await result.steps;
      assert.equal(steps.length, 2, 'a tool step, then the answer');
      assert.equal(steps[0].finishReason, 'tool-calls');
      assert.equal(steps[0].toolCalls.length, 1);
      assert.equal(steps[0].toolCalls[0].toolName, 'get_weather');
      assert.match(steps[0].toolCalls[0].toolCallId, TOOL_CALL_ID);
      assert.equal(typeof steps[0].toolCalls[0].input.location, 'string');
      assert.equal(calls.length, 1, 'execute ran once');
      assert.equal(steps[1].finishReason, 'stop');
      const text = await result.text;
      assert.ok(text.startsWith(WEATHER_PREFIX), text);
      assert.ok(text.includes('sunny, 24 C'), text);
      assert.equal(await result.finishReason, 'stop');
      return steps;
    }

    test('streamText + execute + stopWhen, full history and no session', async () => {
      const steps = await roundTrip(undefined);
      for (const s of steps) assert.equal(s.response.headers['x-session-id'], undefined, 'no session is named');
    });

    test('streamText + execute + stopWhen, with X-Session-Id', async () => {
      const sid = sessionId('ai-tool');
      const steps = await roundTrip({ 'X-Session-Id': sid });
      for (const s of steps) assert.equal(s.response.headers['x-session-id'], sid, 'each step echoes the session');
    });

    test('tool without execute: the app sends the tool result itself (generateText)', async () => {
      const tools = { get_weather: weatherTool() };
      const first = streamText({ model: model(), prompt, tools, maxRetries: 0 });
      await first.consumeStream();
      assert.equal(await first.finishReason, 'tool-calls');
      const [call] = await first.toolCalls;
      assert.equal(call.toolName, 'get_weather');

      const second = await generateText({
        model: model(),
        tools,
        maxRetries: 0,
        messages: [
          { role: 'user', content: prompt },
          ...(await first.response).messages,
          {
            role: 'tool',
            content: [
              {
                type: 'tool-result',
                toolCallId: call.toolCallId,
                toolName: call.toolName,
                output: { type: 'json', value: { sky: 'overcast', celsius: 17 } },
              },
            ],
          },
        ],
      });
      assert.equal(second.finishReason, 'stop');
      assert.ok(second.text.startsWith(WEATHER_PREFIX), second.text);
      assert.ok(second.text.includes('overcast'), second.text);
    });
  });

  describe('errors', () => {
    test('unknown model: generateText throws APICallError 404 model_not_found', async () => {
      await assert.rejects(
        generateText({ model: provider()('no-such-model'), prompt: 'hi', maxRetries: 0 }),
        (err) => {
          assert.ok(APICallError.isInstance(err), `got ${err?.name}: ${err?.message}`);
          assert.equal(err.statusCode, 404);
          assert.equal(err.isRetryable, false);
          assert.equal(JSON.parse(err.responseBody).error.code, 'model_not_found');
          assert.match(err.message, /no-such-model/);
          return true;
        },
      );
    });

    test('unknown model: streamText reports the error part and onError', async () => {
      const errors = [];
      const result = streamText({
        model: provider()('no-such-model'),
        prompt: 'hi',
        maxRetries: 0,
        onError: ({ error }) => errors.push(error),
      });
      const { of } = await drain(result);
      assert.equal(of('error').length, 1);
      const err = of('error')[0].error;
      assert.ok(APICallError.isInstance(err));
      assert.equal(err.statusCode, 404);
      assert.equal(errors.length, 1);
    });
  });

  test('abort mid-stream: streamText ends with an abort part, the gateway ends the run and serves the next request', async () => {
    const ac = new AbortController();
    const requestIds = [];
    const recording = model({
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        requestIds.push(res.headers.get('x-request-id'));
        return res;
      },
    });
    const rec = gw.upstream.record();
    const result = streamText({ model: recording, prompt: LONG_TASK, abortSignal: ac.signal, maxRetries: 0 });
    const types = [];
    let text = '';
    for await (const part of result.fullStream) {
      types.push(part.type);
      if (part.type === 'text-delta') {
        text += part.text;
        if (text.length > 20) ac.abort();
      }
    }
    assert.equal(types.at(-1), 'abort', `last part: ${types.at(-1)}`);
    assert.ok(!types.includes('error'), 'no error part');
    assert.ok(text.length < LONG_TASK.length);

    // The gateway notices the disconnect and ends the request early.
    assert.equal(requestIds.length, 1);
    const entry = await gw.waitForLog((e) => e.msg === 'request' && e.request_id === requestIds[0], 3_000);
    assert.ok(entry.duration_ms < 2_000, `request ran ${entry.duration_ms} ms after the abort`);
    // The gateway aborted the model call it had under way.
    const task = rec.calls.find((c) => c.model === 'task_executor');
    await task.ended;
    assert.equal(task.aborted, true);

    const next = await generateText({ model: model(), prompt: 'hello', maxRetries: 0 });
    assert.equal(next.text, GREETER_REPLY);
  });
});
