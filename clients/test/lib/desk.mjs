// The demo desk these suites run: the tree of the repository's config.yaml
// (a coordinator that transfers to a greeter or a task executor and calls
// a summarizer agent as a tool), on an OpenAI-compatible upstream that
// records what each agent's model was sent (testing/node/upstream.mjs).
// deskAnswer is what those models answer: config.yaml's scripted rules,
// written as a function of the request.
import { contentText } from '../../../testing/node/upstream.mjs';

export const MODEL = 'support-desk';

/** Each agent's instruction, as its model receives it in the system message. */
export const INSTRUCTIONS = {
  coordinator: 'Route each request to the best-suited specialist.',
  greeter: 'Reply with a friendly greeting.',
  task_executor: 'Carry out the requested task.',
  summarizer: 'Summarize the request in one sentence.',
};

/** The coordinator's fallback reply. */
export const COORDINATOR_REPLY =
  "I am the coordinator of agentgate's demo desk. Say hello, ask me to summarize some text, or give me a task.";
/** What the greeter says after "hello" transfers to it. */
export const GREETER_REPLY =
  'Hello! Welcome to the agentgate demo. I am the greeter; the coordinator handed you to me.';
/** What the summarizer answers a request with. */
export const summary = (request) => `In short: ${request}`;
/** The coordinator's reply after calling the summarizer agent as a tool. */
export const summaryReply = (request) => `Here is the summary from the summarizer agent:\n${summary(request)}`;
/** The coordinator's reply once the client's get_weather result is back: this, then the tool message's content. */
export const WEATHER_PREFIX = 'Your client reported: ';
/** The task executor's reply. */
export const taskReply = (task) => `I am the task executor. Your task was: "${task}". Step 1: understood. Step 2: done.`;

/** The gateway's config: the desk on the upstream at baseURL. */
export function deskConfig(baseURL) {
  const agent = (name, description, extra = '') =>
    `  - {name: ${name}, model: up/${name}, description: ${JSON.stringify(description)}, instruction: ${JSON.stringify(INSTRUCTIONS[name])}${extra}}\n`;
  return `server: {shutdown_grace: 5s}
sessions: {backend: memory}
log: {level: info, format: json}
providers:
  - {name: up, type: openai, base_url: "${baseURL}", api_key: not-checked, max_retries: 0}
agents:
${agent('coordinator', 'Routes each request to the right specialist.', ', sub_agents: [greeter, task_executor], agent_tools: [summarizer]')}\
${agent('greeter', 'Greets the user warmly.')}\
${agent('task_executor', 'Executes user tasks step by step.')}\
${agent('summarizer', 'Summarizes any text it is given.')}\
models:
  - id: ${MODEL}
    agent: coordinator
    description: Front desk with specialists (on a recording upstream)
    route_next_turn: root
    client_instructions: append
`;
}

/**
 * What the desk's models answer a chat completions request with. The
 * agent is the request's model; the coordinator answers a tool result
 * (the summarizer's, or the client's get_weather), else routes on the
 * last user message as config.yaml's rules do. Replies stream in chunks of
 * 6 characters, 15 ms apart, as the scripted demo does.
 */
export function deskAnswer(body) {
  const pace = { chunkSize: 6, delayMs: 15 };
  const messages = body.messages;
  const last = messages.at(-1);
  // The user's last words: not the "For context:" notes of what other
  // agents did, which the gateway sends as user messages too.
  const lastUser = contentText(messages.findLast((m) => m.role === 'user' && !contentText(m.content).startsWith('For context:'))?.content);
  const tools = (body.tools ?? []).map((t) => t.function.name);
  const call = (name, args) => ({ toolCalls: [{ name, arguments: args }] });
  switch (body.model) {
    case 'coordinator': {
      if (last.role === 'tool') {
        const name = messages.flatMap((m) => m.tool_calls ?? []).find((c) => c.id === last.tool_call_id)?.function.name;
        if (name === 'summarizer') {
          return { text: `Here is the summary from the summarizer agent:\n${JSON.parse(last.content).text}`, ...pace };
        }
        return { text: `${WEATHER_PREFIX}${last.content}`, ...pace };
      }
      if (/\b(hello|hi|hey|good (morning|afternoon|evening))\b/i.test(lastUser)) return call('transfer_to_agent', { agent_name: 'greeter' });
      if (/summar/i.test(lastUser)) return call('summarizer', { request: lastUser });
      if (tools.includes('get_weather') && /weather/i.test(lastUser)) return call('get_weather', { location: lastUser });
      if (/\b(task|do|please|help)\b/i.test(lastUser)) return call('transfer_to_agent', { agent_name: 'task_executor' });
      return { text: COORDINATOR_REPLY, ...pace };
    }
    case 'greeter':
      return { text: GREETER_REPLY, ...pace };
    case 'task_executor':
      return { text: taskReply(lastUser), ...pace };
    case 'summarizer':
      return { text: summary(lastUser), ...pace };
  }
  throw new Error(`no agent uses model ${body.model}`);
}
