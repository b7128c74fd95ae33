// The chat result types are read on every call, and on every chunk of a stream: compat runs them
// compiled by graphql-jit, which reads a field without a resolver inline but, for a field with one,
// builds resolve info, arguments and callbacks on each read. Fields that only read a property of
// the domain's object are therefore exposed without a resolver; the answers are the same (a
// missing optional property reads as null).
import { describe, expect, it } from 'vitest';
import { isObjectType } from 'graphql';
import { schema } from '../src/graphql/schema.js';

const HOT_TYPES = [
  'ChatCompletion',
  'ChatChoice',
  'ChatMessage',
  'Usage',
  'ChatCompletionChunk',
  'ChatChunkChoice',
  'ChatDelta',
  'ToolCall',
  'ToolCallFunction',
  'ToolCallDelta',
  'ToolCallDeltaFunction',
  'TokenLogprob',
  'TopLogprob',
  'ContentFilterResult',
];

describe('chat result types', () => {
  it.each(HOT_TYPES)('%s has no field resolvers', (name) => {
    const type = schema.getType(name);
    if (!isObjectType(type)) throw new Error(`${name} is not an object type`);
    const withResolvers = Object.values(type.getFields())
      .filter((f) => f.resolve !== undefined)
      .map((f) => f.name);
    expect(withResolvers).toEqual([]);
  });
});
