// Tool calls and JSON output driven by the clients agent frameworks are built on: the official
// openai SDK (create with tools, its streaming helper that assembles tool calls, runTools), and the
// Vercel AI SDK's generateText with a tool, through the openai engine and the fake upstream.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, toolsCatalogYaml, type TestServer } from './support/harness.js';
import { violations } from './support/oracle.js';

let s: TestServer;
let apiKey: string;
let client: OpenAI;

beforeAll(async () => {
  s = await startTestServer({
    yaml: (url) => toolsCatalogYaml(url),
  });
  apiKey = (await s.account('developer')).apiKey;
  client = new OpenAI({ apiKey, baseURL: s.v1, maxRetries: 0 });
});
afterAll(() => s.close());

const parameters = {
  type: 'object',
  properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
  required: ['city', 'unit'],
  additionalProperties: false,
};

describe('the openai SDK with tools', () => {
  it('chat.completions.create with tools returns tool calls', async () => {
    const c = await client.chat.completions.create({
      model: 'chat-tools',
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters } }],
      tool_choice: 'required',
    });
    expect(violations('CreateChatCompletionResponse', c)).toEqual([]);
    expect(c.choices[0]!.finish_reason).toBe('tool_calls');
    const call = c.choices[0]!.message.tool_calls![0]!;
    expect(call.type).toBe('function');
    if (call.type !== 'function') throw new Error('not a function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'x', unit: 'c' });
  });

  it('the streaming helper assembles streamed tool calls (finalChatCompletion)', async () => {
    const stream = client.chat.completions.stream({
      model: 'chat-tools',
      messages: [{ role: 'user', content: 'weather and time?' }],
      tools: [
        { type: 'function', function: { name: 'get_weather', parameters } },
        { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } },
      ],
    });
    const argumentDeltas: string[] = [];
    stream.on('tool_calls.function.arguments.delta', (e) => argumentDeltas.push(e.arguments_delta));
    const final = await stream.finalChatCompletion();
    const calls = final.choices[0]!.message.tool_calls!;
    expect(calls.map((c) => (c.type === 'function' ? [c.function.name, JSON.parse(c.function.arguments)] : null))).toEqual([
      ['get_weather', { city: 'x', unit: 'c' }],
      ['get_time', { zone: 'x' }],
    ]);
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    // The arguments came in several pieces, not in one.
    expect(argumentDeltas.length).toBeGreaterThan(2);
  });

  it('runTools calls the function and sends its result back until the model answers', async () => {
    const seen: unknown[] = [];
    const runner = client.chat.completions.runTools({
      model: 'chat-tools',
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'The weather in a city',
            parameters,
            function: (args: { city: string; unit: string }) => {
              seen.push(args);
              return `21 degrees in ${args.city}`;
            },
            parse: JSON.parse,
          },
        },
      ],
    });
    const content = await runner.finalContent();
    expect(seen).toEqual([{ city: 'x', unit: 'c' }]);
    expect(content).toBe('results: 21 degrees in x');
  });

  it('response_format json_schema through the SDK parses', async () => {
    const c = await client.chat.completions.create({
      model: 'chat-tools',
      messages: [{ role: 'user', content: 'a person' }],
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'person',
          strict: true,
          schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false },
        },
      },
    });
    expect(JSON.parse(c.choices[0]!.message.content!)).toEqual({ name: 'x' });
  });
});

describe('the Vercel AI SDK', () => {
  it('generateText with a tool works through the openai engine (.chat)', async () => {
    const openai = createOpenAI({ baseURL: s.v1, apiKey });
    const executed: unknown[] = [];
    const result = await generateText({
      model: openai.chat('chat-tools'),
      prompt: 'weather in Paris?',
      tools: {
        get_weather: tool({
          description: 'The weather in a city',
          inputSchema: jsonSchema<{ city: string; unit: 'c' | 'f' }>(parameters),
          execute: async (input) => {
            executed.push(input);
            return { degrees: 21 };
          },
        }),
      },
    });
    expect(result.toolCalls.map((c) => [c.toolName, c.input])).toEqual([['get_weather', { city: 'x', unit: 'c' }]]);
    expect(executed).toEqual([{ city: 'x', unit: 'c' }]);
    expect(result.toolResults[0]).toMatchObject({ toolName: 'get_weather', output: { degrees: 21 } });
    expect(result.finishReason).toBe('tool-calls');
    expect(result.usage.inputTokens).toBeGreaterThan(0);
  });
});
