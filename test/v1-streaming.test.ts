// Streamed chat relays each upstream chunk as it comes: never merged with the next one, never held
// back waiting for more. The fake upstream writes each frame only once the client has received the
// event of the frame before, so a relay that buffered would hold the client's event back for good
// (the upstream waits for it) and one that merged would hand the client two events in one read.
import { execute, Kind, print } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documents, eventDocument } from '../compat/operations.js';
import { schema } from '../src/graphql/schema.js';
import { startTestServer, type TestServer } from './support/harness.js';

let s: TestServer;
let apiKey: string;

beforeAll(async () => {
  s = await startTestServer();
  ({ apiKey } = await s.account('developer'));
});
afterAll(() => s.close());

/** How long the upstream waits for the client to see an event before calling it held back. */
const HELD_BACK_MS = 5000;

describe('streamed chat completions', () => {
  it('relays each upstream chunk as its own event, before the upstream sends the next', async () => {
    const tokens = 4;
    const events: string[] = [];
    const reads: string[] = [];
    const heldBack: number[] = [];
    let waiter: (() => void) | undefined;
    let wanted = 0;
    const seen = (count: number) =>
      new Promise<void>((resolve) => {
        if (events.length >= count) return resolve();
        const timer = setTimeout(() => {
          heldBack.push(count);
          waiter = undefined;
          resolve();
        }, HELD_BACK_MS);
        wanted = count;
        waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    // Frames: 0 the role, 1…tokens the content, tokens + 1 the finish, tokens + 2 the usage, then
    // [DONE]. The relay sends its role event when the upstream's head comes, before frame 0; so the
    // event of frame i is the client's event i, and frame i + 1 waits until the client holds i + 1
    // events: the usage frame waits for the finish chunk, which must not wait for the usage.
    s.upstream.setFault({ pace: (frame) => (frame >= 1 && frame <= tokens + 2 ? seen(frame) : Promise.resolve()) });
    try {
      const res = await fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'chat-test',
          messages: [{ role: 'user', content: `one word at a time #tokens=${tokens}` }],
          stream: true,
          stream_options: { include_usage: true },
        }),
      });
      expect(res.status).toBe(200);
      const decoder = new TextDecoder();
      let pending = '';
      for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
        const text = decoder.decode(bytes, { stream: true });
        reads.push(text);
        pending += text;
        let end = pending.indexOf('\n\n');
        while (end >= 0) {
          events.push(pending.slice(0, end));
          pending = pending.slice(end + 2);
          end = pending.indexOf('\n\n');
        }
        if (waiter && events.length >= wanted) {
          const w = waiter;
          waiter = undefined;
          w();
        }
      }
    } finally {
      s.upstream.setFault(null);
    }

    expect(heldBack, 'events the relay held back while the upstream waited for them').toEqual([]);
    const data = events.map((e) => e.replace(/^data: /, ''));
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const content = chunks.slice(1, tokens + 1).map((c) => c.choices[0].delta.content);
    expect(content).toHaveLength(tokens);
    expect(content.every((c: unknown) => typeof c === 'string' && c.length > 0)).toBe(true);
    expect(chunks[tokens + 1].choices[0].finish_reason).toBe('stop');
    expect(chunks[tokens + 2]).toMatchObject({ choices: [], usage: { completion_tokens: tokens } });
    // The role, every content chunk and the finish chunk came in a read of its own, whole: nothing
    // merged, nothing split. (The usage chunk and [DONE] may share one: the upstream sends them
    // back to back.)
    const paced = reads.slice(0, tokens + 2);
    expect(paced.map((r) => r.split('\n\n').length - 1)).toEqual(new Array(tokens + 2).fill(1));
    expect(paced.every((r) => r.startsWith('data: ') && r.endsWith('\n\n'))).toBe(true);
  });
});

describe("a stream's event document", () => {
  it('declares no variables and executes a chunk as the operation does with its variables', () => {
    const input = { model: '', messages: [] };
    const doc = eventDocument(documents.chatCompletionStream, { input });
    const op = doc.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION);
    expect(op?.variableDefinitions ?? []).toEqual([]);
    expect(print(doc)).toContain('chatCompletionStream(input: {messages: [], model: ""})');
    const chunk = {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'chat-test',
      choices: [
        {
          index: 0,
          delta: { content: 'hi' },
          finishReason: null,
          logprobs: [{ token: 'hi', logprob: -0.5, bytes: [104, 105], topLogprobs: [] }],
        },
      ],
      usage: null,
    };
    const viaEvent = execute({ schema, document: doc, rootValue: chunk, contextValue: {} });
    const viaVariables = execute({
      schema,
      document: documents.chatCompletionStream,
      variableValues: { input },
      rootValue: chunk,
      contextValue: {},
    });
    expect(viaEvent).toEqual(viaVariables);
    expect(viaEvent).toMatchObject({ data: { chatCompletionStream: { choices: [{ delta: { content: 'hi' } }] } } });
  });
});
