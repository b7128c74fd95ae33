// What both sides of the in-process llama.cpp benchmark send: the same prompt, answer length and
// embedding inputs (./llamacpp.ts runs tollgate, ./llamacpp-direct-main.ts node-llama-cpp itself).
import type { writeFixtures } from '../src/fixtures/gguf-fixtures.js';

export type Fixtures = ReturnType<typeof writeFixtures>;

// Long answers: the tiny model makes a token in about half a millisecond, so the fixed cost of an HTTP
// request (auth, GraphQL, billing; about 10–15 ms here) would otherwise dominate in a way it never
// does with a real model (tens of milliseconds per token).
export const MAX_TOKENS = 768;
// The most inputs one request may carry (section 4.4): what a throughput-minded client sends.
export const EMBED_BATCH = 100;
export const MESSAGES = [{ role: 'user' as const, content: 'Write a long story about a lighthouse keeper and the sea.' }];
export const EMBED_INPUTS = Array.from(
  { length: EMBED_BATCH },
  (_, i) => `document number ${i}: a short text about topic ${i % 7} to embed`,
);
