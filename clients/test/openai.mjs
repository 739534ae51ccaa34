// The official openai package (openai-node) against the gateway: raw
// iteration over `stream: true`, the ChatCompletionStream helper
// (.stream().finalChatCompletion()), typed errors, aborts, sessions.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { transcript } from '../../testing/node/upstream.mjs';
import {
  gw,
  MODEL,
  COORDINATOR_REPLY,
  GREETER_REPLY,
  summaryReply,
  WEATHER_PREFIX,
  weatherTool,
  TOOL_CALL_ID,
  sessionId,
  LONG_TASK,
} from './lib/context.mjs';

function client() {
  return new OpenAI({ baseURL: gw.baseURL, apiKey: 'not-checked', maxRetries: 0, timeout: 15_000 });
}

/** Collects a raw stream: every chunk, the joined content, the finish reasons. */
async function collect(stream) {
  const chunks = [];
  let text = '';
  for await (const chunk of stream) {
    chunks.push(chunk);
    for (const c of chunk.choices) text += c.delta?.content ?? '';
  }
  const finishes = chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter((f) => f != null);
  return { chunks, text, finishes };
}

/** The wire rules every streamed chunk sequence follows (openai-wire.md §2). */
function assertWellFormedStream(chunks, { usage = false } = {}) {
  assert.ok(chunks.length > 1, 'more than one chunk');
  const first = chunks[0];
  for (const [i, c] of chunks.entries()) {
    assert.equal(c.object, 'chat.completion.chunk', `chunk ${i} object`);
    assert.equal(c.id, first.id, `chunk ${i} shares the id`);
    assert.equal(c.created, first.created, `chunk ${i} shares created`);
    assert.equal(c.model, MODEL, `chunk ${i} model`);
    assert.ok(c.agentgate && typeof c.agentgate.author === 'string', `chunk ${i} carries agentgate.author`);
    assert.equal(c.agentgate.invocation_id, first.agentgate.invocation_id, `chunk ${i}: one invocation per turn`);
    if (i > 0) {
      for (const ch of c.choices) assert.equal(ch.delta.role, undefined, `chunk ${i}: role only in the first delta`);
    }
  }
  assert.equal(first.choices[0].delta.role, 'assistant');
  const withFinish = chunks.filter((c) => c.choices.some((ch) => ch.finish_reason != null));
  assert.equal(withFinish.length, 1, 'exactly one finish_reason');
  const choiceChunks = chunks.filter((c) => c.choices.length > 0);
  assert.equal(choiceChunks.at(-1), withFinish[0], 'finish_reason is on the last choice chunk');
  if (usage) {
    const last = chunks.at(-1);
    assert.deepEqual(last.choices, [], 'usage chunk has choices: []');
    assert.ok(last.usage, 'usage chunk has usage');
    for (const c of chunks.slice(0, -1)) assert.ok(c.usage == null, 'only the last chunk has usage');
  } else {
    for (const c of chunks) {
      assert.ok(c.choices.length > 0, 'no empty-choices chunk without include_usage');
      assert.ok(c.usage == null, 'no usage without include_usage');
    }
  }
}

function assertUsage(u) {
  assert.ok(u, 'usage present');
  assert.ok(u.prompt_tokens > 0, 'prompt_tokens > 0');
  assert.ok(u.completion_tokens > 0, 'completion_tokens > 0');
  assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
}

describe('openai package', () => {
  test('models.list and models.retrieve show the virtual model', async () => {
    const openai = client();
    const ids = [];
    for await (const m of openai.models.list()) ids.push(m.id);
    assert.ok(ids.includes(MODEL), `models: ${ids}`);
    const m = await openai.models.retrieve(MODEL);
    assert.equal(m.id, MODEL);
    assert.equal(m.object, 'model');
  });

  test('plain text, non-streaming', async () => {
    const { data: completion, response } = await client()
      .chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Who are you?' }] })
      .withResponse();
    assert.match(response.headers.get('content-type'), /^application\/json/);
    assert.ok(completion._request_id, 'x-request-id surfaces as _request_id');
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.model, MODEL);
    assert.equal(completion.choices.length, 1);
    const [choice] = completion.choices;
    assert.equal(choice.index, 0);
    assert.equal(choice.finish_reason, 'stop');
    assert.equal(choice.message.role, 'assistant');
    assert.equal(choice.message.content, COORDINATOR_REPLY);
    assert.equal(choice.message.refusal, null);
    assert.equal(choice.message.tool_calls, undefined);
    assertUsage(completion.usage);
    assert.equal(completion.agentgate.author, 'coordinator');
    assert.match(completion.agentgate.invocation_id, /\S/);
    assert.equal(response.headers.get('x-session-id'), null, 'no session stored without a session id');
  });

  test('streaming (raw for await): deltas joined equal the non-streaming text', async () => {
    const openai = client();
    const messages = [{ role: 'user', content: 'Who are you?' }];
    const { data: stream, response } = await openai.chat.completions
      .create({ model: MODEL, messages, stream: true })
      .withResponse();
    assert.match(response.headers.get('content-type'), /^text\/event-stream/);
    assert.equal(response.headers.get('cache-control'), 'no-cache');
    assert.equal(response.headers.get('x-accel-buffering'), 'no');
    assert.equal(response.headers.get('content-encoding'), null);
    const { chunks, text, finishes } = await collect(stream);
    assertWellFormedStream(chunks);
    const contentChunks = chunks.filter((c) => c.choices[0]?.delta?.content);
    assert.ok(contentChunks.length > 1, 'the text arrives in several deltas');
    assert.deepEqual(finishes, ['stop']);
    const full = await openai.chat.completions.create({ model: MODEL, messages });
    assert.equal(text, full.choices[0].message.content);
    assert.equal(text, COORDINATOR_REPLY);
  });

  test('streaming helper: .stream().finalChatCompletion()', async () => {
    const runner = client().chat.completions.stream({
      model: MODEL,
      messages: [{ role: 'user', content: 'Who are you?' }],
    });
    let deltas = '';
    runner.on('content', (delta) => (deltas += delta));
    const final = await runner.finalChatCompletion();
    assert.equal(final.choices[0].message.role, 'assistant');
    assert.equal(final.choices[0].message.content, COORDINATOR_REPLY);
    assert.equal(final.choices[0].finish_reason, 'stop');
    assert.equal(deltas, COORDINATOR_REPLY);
  });

  test('transfer: the agentgate extension shows transfer_to_agent and author greeter (raw chunks)', async () => {
    const stream = await client().chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hello there' }],
      stream: true,
    });
    const { chunks, text, finishes } = await collect(stream);
    assertWellFormedStream(chunks);
    assert.equal(text, GREETER_REPLY);
    assert.deepEqual(finishes, ['stop']);

    const transfers = chunks.filter((c) => c.agentgate.transfer_to_agent !== undefined);
    assert.equal(transfers.length, 1, 'one chunk marks the transfer');
    assert.equal(transfers[0].agentgate.transfer_to_agent, 'greeter');
    assert.equal(transfers[0].agentgate.author, 'coordinator', 'the coordinator transfers');
    const ti = chunks.indexOf(transfers[0]);
    const textChunks = chunks.filter((c) => c.choices[0]?.delta?.content);
    assert.ok(textChunks.length > 0);
    for (const c of textChunks) {
      assert.equal(c.agentgate.author, 'greeter', 'every text delta is the greeter speaking');
      assert.ok(chunks.indexOf(c) > ti, 'text comes after the transfer');
    }
  });

  test('transfer, non-streaming: the completion is the greeter\'s and names the transfer', async () => {
    const completion = await client().chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hello' }],
    });
    assert.equal(completion.choices[0].message.content, GREETER_REPLY);
    assert.equal(completion.agentgate.author, 'greeter');
    assert.equal(completion.agentgate.transfer_to_agent, 'greeter');
  });

  test('agent tool: the summarizer answers inside the coordinator\'s reply', async () => {
    const request = 'summarize: agentgate serves agent trees as OpenAI models';
    const openai = client();
    const completion = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: request }] });
    assert.equal(completion.choices[0].message.content, summaryReply(request));
    assert.equal(completion.choices[0].finish_reason, 'stop');
    assert.equal(completion.choices[0].message.tool_calls, undefined, 'the agent tool is not a client tool call');
    assert.equal(completion.agentgate.author, 'coordinator');

    const { chunks, text } = await collect(
      await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: request }], stream: true }),
    );
    assertWellFormedStream(chunks);
    assert.equal(text, summaryReply(request));
    for (const c of chunks) {
      assert.equal(c.agentgate.author, 'coordinator', 'the summarizer\'s own text stays inside its tool result');
      assert.equal(c.choices[0]?.delta?.tool_calls, undefined);
    }
  });

  test('usage: stream_options.include_usage adds one usage chunk before [DONE]', async () => {
    const openai = client();
    const messages = [{ role: 'user', content: 'hello' }];
    const { chunks } = await collect(
      await openai.chat.completions.create({ model: MODEL, messages, stream: true, stream_options: { include_usage: true } }),
    );
    assertWellFormedStream(chunks, { usage: true });
    const usage = chunks.at(-1).usage;
    assertUsage(usage);
    const full = await openai.chat.completions.create({ model: MODEL, messages });
    assert.deepEqual(usage, full.usage, 'streamed usage equals the non-streaming usage (summed over the tree)');

    const final = await openai.chat.completions
      .stream({ model: MODEL, messages, stream_options: { include_usage: true } })
      .finalChatCompletion();
    assertUsage(final.usage);
  });

  describe('client tool round trip', () => {
    const question = 'What is the weather in Paris?';
    const base = { model: MODEL, tools: [weatherTool] };

    function assertWeatherCall(message, finishReason) {
      assert.equal(finishReason, 'tool_calls');
      assert.equal(message.role, 'assistant');
      assert.equal(message.tool_calls?.length, 1, 'one tool call');
      const [call] = message.tool_calls;
      assert.match(call.id, TOOL_CALL_ID);
      assert.equal(call.type, 'function');
      assert.equal(call.function.name, 'get_weather');
      const args = JSON.parse(call.function.arguments);
      assert.equal(typeof args.location, 'string');
      return call;
    }

    test('streamed tool_call deltas, then the full history back without a session', async () => {
      const openai = client();
      const messages = [{ role: 'user', content: question }];
      const { chunks, finishes } = await collect(
        await openai.chat.completions.create({ ...base, messages, stream: true }),
      );
      assertWellFormedStream(chunks);
      assert.deepEqual(finishes, ['tool_calls']);
      const toolDeltas = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
      assert.ok(toolDeltas.length >= 1);
      for (const d of toolDeltas) assert.equal(d.index, 0, 'index on every tool-call delta');
      assert.ok(toolDeltas[0].id && toolDeltas[0].function.name === 'get_weather', 'id and name on the first delta');
      for (const d of toolDeltas.slice(1)) {
        assert.equal(d.id, undefined, 'id only on the first delta');
        assert.equal(d.function?.name, undefined, 'name only on the first delta');
      }
      const args = toolDeltas.map((d) => d.function?.arguments ?? '').join('');
      assert.equal(typeof JSON.parse(args).location, 'string');

      // The helper assembles the same call.
      const final = await openai.chat.completions.stream({ ...base, messages }).finalChatCompletion();
      const call = assertWeatherCall(final.choices[0].message, final.choices[0].finish_reason);

      const rec = gw.upstream.record();
      const { data: answer, response } = await openai.chat.completions
        .create({
          ...base,
          messages: [
            ...messages,
            final.choices[0].message,
            { role: 'tool', tool_call_id: call.id, content: 'sunny, 21 C' },
          ],
        })
        .withResponse();
      assert.equal(answer.choices[0].finish_reason, 'stop');
      assert.ok(answer.choices[0].message.content.startsWith(WEATHER_PREFIX), answer.choices[0].message.content);
      assert.ok(answer.choices[0].message.content.includes('sunny, 21 C'));
      assert.equal(response.headers.get('x-session-id'), null, 'a stateless resume stores no session');
      // The paused invocation resumed: the model gets its own call and the
      // client's result, once.
      assert.deepEqual(
        rec.calls.map((c) => [c.model, transcript(c.body)]),
        [['coordinator', [['user', question], ['assistant', `get_weather(${JSON.stringify({ location: question })})`], ['tool', '{"result":"sunny, 21 C"}']]]],
      );
    });

    test('non-streaming call, streamed resume, assistant content ""', async () => {
      const openai = client();
      const messages = [{ role: 'user', content: question }];
      const first = await openai.chat.completions.create({ ...base, messages });
      assert.equal(first.choices[0].message.content, null, 'content is null beside tool_calls');
      const call = assertWeatherCall(first.choices[0].message, first.choices[0].finish_reason);

      const { chunks, text, finishes } = await collect(
        await openai.chat.completions.create({
          ...base,
          stream: true,
          messages: [
            ...messages,
            { role: 'assistant', content: '', tool_calls: first.choices[0].message.tool_calls },
            { role: 'tool', tool_call_id: call.id, content: 'light rain' },
          ],
        }),
      );
      assertWellFormedStream(chunks);
      assert.deepEqual(finishes, ['stop']);
      assert.ok(text.startsWith(WEATHER_PREFIX) && text.includes('light rain'), text);
      assert.equal(chunks[0].agentgate.invocation_id, first.agentgate.invocation_id, 'the paused invocation resumes');
    });

    test('with an X-Session-Id header', async () => {
      const openai = client();
      const sid = sessionId('tool');
      const headers = { 'X-Session-Id': sid };
      const messages = [{ role: 'user', content: question }];
      const runner = openai.chat.completions.stream({ ...base, messages }, { headers });
      const final = await runner.finalChatCompletion();
      const call = assertWeatherCall(final.choices[0].message, final.choices[0].finish_reason);

      const { data: answer, response } = await openai.chat.completions
        .create(
          {
            ...base,
            messages: [...messages, final.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'snow' }],
          },
          { headers },
        )
        .withResponse();
      assert.equal(response.headers.get('x-session-id'), sid);
      assert.equal(answer.choices[0].finish_reason, 'stop');
      assert.ok(answer.choices[0].message.content.startsWith(WEATHER_PREFIX));
      assert.ok(answer.choices[0].message.content.includes('snow'));

      // The session goes on after the round trip.
      const next = await openai.chat.completions.create(
        { model: MODEL, messages: [{ role: 'user', content: 'hello' }] },
        { headers },
      );
      assert.equal(next.choices[0].message.content, GREETER_REPLY);
    });

    test('runTools: openai-node\'s own tool loop (streaming) runs the tool and gets the answer', async () => {
      const seen = [];
      const runner = client().chat.completions.runTools({
        model: MODEL,
        stream: true,
        messages: [{ role: 'user', content: question }],
        tools: [
          {
            type: 'function',
            function: {
              ...weatherTool.function,
              parse: JSON.parse,
              function: async (args) => {
                seen.push(args);
                return { sky: 'clear', celsius: 19 };
              },
            },
          },
        ],
      });
      const final = await runner.finalChatCompletion();
      assert.equal(seen.length, 1, 'the tool ran once');
      assert.equal(typeof seen[0].location, 'string');
      assert.equal(final.choices[0].message.role, 'assistant');
      assert.ok(final.choices[0].message.content.startsWith(WEATHER_PREFIX), final.choices[0].message.content);
      assert.ok(final.choices[0].message.content.includes('clear'));
      assert.deepEqual(
        runner.messages.map((m) => m.role),
        ['user', 'assistant', 'tool', 'assistant'],
      );
    });

    test('in a session, resending an answered tool result is a 400 unknown_tool_call (a client retry)', async () => {
      const openai = client();
      const headers = { 'X-Session-Id': sessionId('replay') };
      const messages = [{ role: 'user', content: question }];
      const first = await openai.chat.completions.create({ ...base, messages }, { headers });
      const call = assertWeatherCall(first.choices[0].message, first.choices[0].finish_reason);
      const resume = {
        ...base,
        messages: [...messages, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'fog' }],
      };
      const answer = await openai.chat.completions.create(resume, { headers });
      assert.ok(answer.choices[0].message.content.startsWith(WEATHER_PREFIX));
      // The same request again, as a retry would send it: never a second run.
      await assert.rejects(openai.chat.completions.create(resume, { headers }), (err) => {
        assert.ok(err instanceof OpenAI.BadRequestError, `got ${err?.constructor?.name}: ${err?.message}`);
        assert.equal(err.code, 'unknown_tool_call');
        return true;
      });
      // Without a session, too.
      const plain = await openai.chat.completions.create({ ...base, messages });
      const pcall = plain.choices[0].message.tool_calls[0];
      const presume = {
        ...base,
        messages: [...messages, plain.choices[0].message, { role: 'tool', tool_call_id: pcall.id, content: 'fog' }],
      };
      await openai.chat.completions.create(presume);
      await assert.rejects(openai.chat.completions.create(presume), OpenAI.BadRequestError);
    });

    test('a tool message for an unknown tool_call_id is a 400', async () => {
      await assert.rejects(
        client().chat.completions.create({
          ...base,
          messages: [
            { role: 'user', content: question },
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'call_neverissued', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
            },
            { role: 'tool', tool_call_id: 'call_neverissued', content: 'x' },
          ],
        }),
        (err) => {
          assert.ok(err instanceof OpenAI.BadRequestError, `got ${err?.constructor?.name}: ${err?.message}`);
          assert.equal(err.status, 400);
          assert.equal(err.type, 'invalid_request_error');
          assert.ok(err.param, 'the error names a param');
          return true;
        },
      );
    });
  });

  describe('errors', () => {
    test('unknown model: openai.NotFoundError with code model_not_found', async () => {
      for (const stream of [false, true]) {
        await assert.rejects(
          client().chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }], stream }),
          (err) => {
            assert.ok(err instanceof OpenAI.NotFoundError, `stream=${stream}: got ${err?.constructor?.name}`);
            assert.equal(err.status, 404);
            assert.equal(err.code, 'model_not_found');
            assert.equal(err.param, 'model');
            assert.equal(err.type, 'invalid_request_error');
            assert.match(err.message, /no-such-model/);
            assert.ok(err.requestID, 'x-request-id on errors too');
            return true;
          },
        );
      }
      await assert.rejects(client().models.retrieve('no-such-model'), OpenAI.NotFoundError);
    });

    test('n=2: openai.BadRequestError with param n', async () => {
      await assert.rejects(
        client().chat.completions.create({ model: MODEL, n: 2, messages: [{ role: 'user', content: 'hi' }] }),
        (err) => {
          assert.ok(err instanceof OpenAI.BadRequestError, `got ${err?.constructor?.name}`);
          assert.equal(err.status, 400);
          assert.equal(err.param, 'n');
          assert.equal(err.type, 'invalid_request_error');
          return true;
        },
      );
      const ok = await client().chat.completions.create({ model: MODEL, n: 1, messages: [{ role: 'user', content: 'x' }] });
      assert.equal(ok.choices.length, 1);
    });
  });

  test('abort mid-stream with an AbortController: the client stops cleanly and the run ends', async () => {
    const openai = client();
    const rec = gw.upstream.record();
    const ac = new AbortController();
    const { data: stream, response } = await openai.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: LONG_TASK }], stream: true }, { signal: ac.signal })
      .withResponse();
    const requestId = response.headers.get('x-request-id');
    assert.ok(requestId);
    let seen = 0;
    let text = '';
    const started = Date.now();
    // openai-node ends the iteration quietly when its signal aborts.
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (++seen === 3) ac.abort();
    }
    assert.ok(seen >= 3 && seen < 10, `iteration stopped right after the abort (saw ${seen} chunks)`);
    assert.ok(text.length < LONG_TASK.length, 'only part of the reply arrived');
    assert.ok(Date.now() - started < 2_000);

    // The gateway notices the disconnect: the request ends long before the
    // reply would have finished streaming (several seconds).
    const entry = await gw.waitForLog((e) => e.msg === 'request' && e.request_id === requestId, 3_000);
    assert.ok(entry.duration_ms < 2_000, `request ran ${entry.duration_ms} ms after the abort`);
    // And the task executor's model call, under way, was aborted.
    const task = rec.calls.find((c) => c.model === 'task_executor');
    await task.ended;
    assert.equal(task.aborted, true);

    // And it still serves the next request.
    const next = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(next.choices[0].message.content, GREETER_REPLY);
  });

  test('a session busy with a stream is a 409 (ConflictError); breaking out of for await frees it', async () => {
    const openai = client();
    const headers = { 'X-Session-Id': sessionId('break') };
    const { data: stream, response } = await openai.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: LONG_TASK }], stream: true }, { headers })
      .withResponse();
    const requestId = response.headers.get('x-request-id');
    let seen = 0;
    for await (const _ of stream) {
      if (++seen === 2) {
        // sessions.busy_wait is 0s in config.yaml: a second turn is refused at once.
        await assert.rejects(
          openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hello' }] }, { headers }),
          (err) => {
            assert.ok(err instanceof OpenAI.ConflictError, `got ${err?.constructor?.name}: ${err?.message}`);
            assert.equal(err.status, 409);
            assert.equal(err.code, 'session_busy');
            return true;
          },
        );
        break;
      }
    }
    // The gateway notices the disconnect, ends the run and releases the session.
    const entry = await gw.waitForLog((e) => e.msg === 'request' && e.request_id === requestId, 3_000);
    assert.ok(entry.duration_ms < 2_000, `request ran ${entry.duration_ms} ms after the break`);
    const again = await collect(
      await openai.chat.completions.create(
        { model: MODEL, messages: [{ role: 'user', content: 'hello' }], stream: true },
        { headers },
      ),
    );
    assert.equal(again.text, GREETER_REPLY);
  });

  describe('sessions', () => {
    test('two turns with the same X-Session-Id: the header is echoed and the history is kept', async () => {
      const openai = client();
      const sid = sessionId('turns');
      const headers = { 'X-Session-Id': sid };

      const { data: t1, response: r1 } = await openai.chat.completions
        .create({ model: MODEL, messages: [{ role: 'user', content: 'hello' }], stream: true }, { headers })
        .withResponse();
      assert.equal(r1.headers.get('x-session-id'), sid, 'streaming response echoes X-Session-Id');
      const turn1 = await collect(t1);
      assert.equal(turn1.text, GREETER_REPLY);

      const second = 'summarize the first turn';
      const rec = gw.upstream.record();
      const { data: t2, response: r2 } = await openai.chat.completions
        .create({ model: MODEL, messages: [{ role: 'user', content: second }] }, { headers })
        .withResponse();
      assert.equal(r2.headers.get('x-session-id'), sid, 'non-streaming response echoes X-Session-Id');
      assert.equal(t2.choices[0].message.content, summaryReply(second));
      assert.notEqual(t2.agentgate.invocation_id, turn1.chunks[0].agentgate.invocation_id, 'a new turn is a new invocation');

      // The stored history reaches the model (the first turn, then the new
      // message), and so the same message without a session has a shorter
      // prompt.
      assert.deepEqual(transcript(rec.calls[0].body), [
        ['user', 'hello'],
        ['assistant', 'transfer_to_agent({"agent_name":"greeter"})'],
        ['tool', '{"result":null}'],
        ['user', `For context:\n[greeter] said: ${GREETER_REPLY}`],
        ['user', second],
      ]);
      const alone = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: second }] });
      assert.ok(
        t2.usage.prompt_tokens > alone.usage.prompt_tokens,
        `session prompt (${t2.usage.prompt_tokens}) longer than a fresh one (${alone.usage.prompt_tokens})`,
      );
    });

    test('with a session the stored history is authoritative: resending it does not duplicate it', async () => {
      const openai = client();
      const turn1 = { role: 'user', content: 'hello' };
      const turn2 = { role: 'user', content: 'Who are you?' };
      const a = { 'X-Session-Id': sessionId('full') };
      const b = { 'X-Session-Id': sessionId('new-only') };
      const r1 = await openai.chat.completions.create({ model: MODEL, messages: [turn1] }, { headers: a });
      await openai.chat.completions.create({ model: MODEL, messages: [turn1] }, { headers: b });
      // a sends the whole conversation, b only the new message.
      const fa = await openai.chat.completions.create(
        { model: MODEL, messages: [turn1, r1.choices[0].message, turn2] },
        { headers: a },
      );
      const fb = await openai.chat.completions.create({ model: MODEL, messages: [turn2] }, { headers: b });
      assert.equal(fa.choices[0].message.content, COORDINATOR_REPLY);
      assert.equal(fb.choices[0].message.content, COORDINATOR_REPLY);
      assert.equal(fa.usage.prompt_tokens, fb.usage.prompt_tokens);
    });
  });

  describe('stateless pauses', () => {
    const question = 'What is the weather in Oslo?';
    const base = { model: MODEL, tools: [weatherTool] };

    test('a stateless turn paused on a client tool sends no X-Session-Id and resumes by tool_call_id', async () => {
      const openai = client();
      const messages = [{ role: 'user', content: question }];
      const { data: first, response } = await openai.chat.completions.create({ ...base, messages }).withResponse();
      const call = first.choices[0].message.tool_calls[0];
      assert.equal(response.headers.get('x-session-id'), null);
      const answer = await openai.chat.completions.create({
        ...base,
        messages: [...messages, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'fog' }],
      });
      assert.ok(answer.choices[0].message.content.startsWith(WEATHER_PREFIX));
    });
  });
});
