// The fake upstream's chat features beyond plain text, answered as OpenAI does (deterministic):
// - tools: with `tools` and a tool_choice other than 'none' the model calls tools, unless the
//   conversation ends with tool results (then it answers in text, quoting them), or tool_choice is
//   'required' or names a function. A named function is called alone; otherwise the first tool, or
//   the first two when there are two or more and parallel_tool_calls is not false. The arguments
//   are a value of the tool's parameters schema (first enum value, "x" for strings, 1 for numbers,
//   true for booleans, every property of an object). Streamed as OpenAI streams them: the id, type
//   and name with an empty `arguments`, then the arguments in pieces of 4 characters.
// - response_format: json_object answers {"answer": "w0 w1 …"}; json_schema answers a value of the
//   schema; streamed in pieces of 4 characters.
// - n: n choices; choice i > 0 says "c<i>w0 c<i>w1 …"; streamed interleaved, each choice its own
//   role, content and finish chunks.
// - logprobs: every content piece gets a log-probability (-0.25 × (its position + 1)), with
//   top_logprobs alternatives ("alt<k>", lower each).
// - seed: accepted (the answers are deterministic anyway).
// - `#flag=N` (the fake upstream's marker): choice 0's word N is 'kill' (the other choices are clean).
import type { ServerResponse } from 'node:http';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Rec = Record<string, unknown>;
const rec = (v: unknown): Rec | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Rec) : undefined);

/** A value that validates against the (simple) schema. */
export function sampleOf(schema: unknown): Json {
  const s = rec(schema);
  if (!s) return {};
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0] as Json;
  if (s.const !== undefined) return s.const as Json;
  if (Array.isArray(s.anyOf) && s.anyOf.length > 0) return sampleOf(s.anyOf[0]);
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'string':
      return 'x';
    case 'number':
    case 'integer':
      return typeof s.minimum === 'number' ? s.minimum : 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array':
      return typeof s.minItems === 'number' && s.minItems > 0 ? Array.from({ length: s.minItems }, () => sampleOf(s.items)) : [];
    default: {
      const out: Record<string, Json> = {};
      for (const [k, v] of Object.entries(rec(s.properties) ?? {})) out[k] = sampleOf(v);
      return out;
    }
  }
}

interface Call {
  id: string;
  name: string;
  arguments: string;
}
interface ChoiceOut {
  /** Content pieces (one per streamed chunk, one token each). */
  pieces: string[];
  calls: Call[];
  finish: 'stop' | 'length' | 'tool_calls';
}

export function wantsFeatures(body: Rec): boolean {
  const format = rec(body.response_format)?.type;
  return (
    (Array.isArray(body.tools) && body.tools.length > 0) ||
    (format !== undefined && format !== 'text') ||
    (typeof body.n === 'number' && body.n > 1) ||
    body.logprobs === true
  );
}

const split = (text: string, size = 4) => {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
};

function callsFor(body: Rec, seq: number): Call[] | undefined {
  const tools = (Array.isArray(body.tools) ? body.tools : []).map((t) => rec(rec(t)?.function) ?? {});
  if (tools.length === 0) return undefined;
  const choice = body.tool_choice ?? 'auto';
  if (choice === 'none') return undefined;
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const last = rec(messages[messages.length - 1]);
  const forced = choice === 'required' || rec(choice) !== undefined;
  if (last?.role === 'tool' && !forced) return undefined;
  const named = rec(rec(choice)?.function)?.name;
  const chosen = named
    ? tools.filter((t) => t.name === named)
    : tools.slice(0, body.parallel_tool_calls === false || tools.length < 2 ? 1 : 2);
  return chosen.map((t, i) => ({ id: `call_fake${seq}_${i}`, name: String(t.name), arguments: JSON.stringify(sampleOf(t.parameters)) }));
}

function toolResults(body: Rec): string {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const results: string[] = [];
  for (let i = messages.length - 1; i >= 0 && rec(messages[i])?.role === 'tool'; i--) results.unshift(String(rec(messages[i])!.content));
  return results.length ? `results: ${results.join(', ')}` : '';
}

function choicesFor(body: Rec, seq: number, words: number, cap: number, flagWord?: number): ChoiceOut[] {
  const n = typeof body.n === 'number' && body.n > 1 ? body.n : 1;
  const format = rec(body.response_format);
  const out: ChoiceOut[] = [];
  for (let c = 0; c < n; c++) {
    const calls = callsFor(body, seq + c * 1000);
    if (calls) {
      out.push({ pieces: [], calls, finish: 'tool_calls' });
      continue;
    }
    let pieces: string[];
    if (format?.type === 'json_schema') pieces = split(JSON.stringify(sampleOf(rec(format.json_schema)?.schema)));
    else if (format?.type === 'json_object')
      pieces = split(JSON.stringify({ answer: Array.from({ length: words }, (_, i) => `w${i}`).join(' ') }));
    else {
      const after = toolResults(body);
      const prefix = c === 0 ? '' : `c${c}`;
      const word = (i: number) => (c === 0 && i === flagWord ? 'kill' : `${prefix}w${i}`);
      pieces = after ? split(after) : Array.from({ length: words }, (_, i) => `${i === 0 ? '' : ' '}${word(i)}`);
    }
    // JSON is never cut (the tests check it parses); words are, at max_tokens.
    const cut = !format && pieces.length > cap;
    out.push({ pieces: cut ? pieces.slice(0, cap) : pieces, calls: [], finish: cut ? 'length' : 'stop' });
  }
  return out;
}

function logprobsOf(pieces: string[], top: number) {
  return {
    content: pieces.map((token, j) => ({
      token,
      logprob: -0.25 * (j + 1),
      bytes: [...Buffer.from(token, 'utf8')],
      top_logprobs: Array.from({ length: top }, (_, k) => ({
        token: k === 0 ? token : `alt${k}`,
        logprob: -0.25 * (j + 1) - k,
        bytes: [...Buffer.from(k === 0 ? token : `alt${k}`, 'utf8')],
      })),
    })),
    refusal: null,
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Answers a chat request that uses tools, response_format, n > 1 or logprobs. */
export async function featureChat(
  res: ServerResponse,
  body: Rec,
  o: {
    id: string;
    created: number;
    model: string;
    words: number;
    cap: number;
    delay: number;
    promptTokens: number;
    noUsage: boolean;
    flagWord?: number;
  },
): Promise<void> {
  const seq = Number(o.id.replace(/\D/g, '')) || 0;
  const choices = choicesFor(body, seq, o.words, o.cap, o.flagWord);
  const wantLogprobs = body.logprobs === true;
  const top = typeof body.top_logprobs === 'number' ? body.top_logprobs : 0;
  let completion = 0;
  for (const c of choices) completion += c.pieces.length + c.calls.reduce((k, call) => k + 1 + split(call.arguments).length, 0);
  const usage = o.noUsage
    ? undefined
    : { prompt_tokens: o.promptTokens, completion_tokens: completion, total_tokens: o.promptTokens + completion };
  const head = { id: o.id, created: o.created, model: o.model, system_fingerprint: 'fp_fake' };

  if (body.stream !== true) {
    if (o.delay > 0) await sleep(o.delay);
    if (res.destroyed) return;
    const out: Rec = {
      ...head,
      object: 'chat.completion',
      choices: choices.map((c, index) => ({
        index,
        message: {
          role: 'assistant',
          content: c.calls.length ? null : c.pieces.join(''),
          refusal: null,
          ...(c.calls.length
            ? {
                tool_calls: c.calls.map((call) => ({
                  id: call.id,
                  type: 'function',
                  function: { name: call.name, arguments: call.arguments },
                })),
              }
            : {}),
        },
        logprobs: wantLogprobs ? logprobsOf(c.pieces, top) : null,
        finish_reason: c.finish,
      })),
    };
    if (usage) out.usage = usage;
    const text = JSON.stringify(out);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
    return;
  }

  const includeUsage = rec(body.stream_options)?.include_usage === true && !!usage;
  const frame = (index: number, delta: Rec, finish: string | null, logprobs: unknown = null) =>
    `data: ${JSON.stringify({
      ...head,
      object: 'chat.completion.chunk',
      choices: [{ index, delta, logprobs, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}),
    })}\n\n`;
  const frames: string[] = [];
  choices.forEach((c, i) => {
    frames.push(frame(i, c.calls.length ? { role: 'assistant', content: null } : { role: 'assistant', content: '' }, null));
  });
  // Interleaved: the j-th piece of every choice, then the (j+1)-th.
  const streams = choices.map((c) => {
    const out: { delta: Rec; logprobs: unknown }[] = c.pieces.map((p, j) => ({
      delta: { content: p },
      logprobs: wantLogprobs
        ? { content: logprobsOf([p], top).content.map((l) => ({ ...l, logprob: -0.25 * (j + 1) })), refusal: null }
        : null,
    }));
    c.calls.forEach((call, index) => {
      out.push({
        delta: { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] },
        logprobs: null,
      });
      for (const piece of split(call.arguments))
        out.push({ delta: { tool_calls: [{ index, function: { arguments: piece } }] }, logprobs: null });
    });
    return out;
  });
  const longest = Math.max(...streams.map((s) => s.length));
  for (let j = 0; j < longest; j++) {
    streams.forEach((s, i) => {
      if (j < s.length) frames.push(frame(i, s[j]!.delta, null, s[j]!.logprobs));
    });
  }
  for (const [i, c] of choices.entries()) frames.push(frame(i, {}, c.finish));
  if (includeUsage) frames.push(`data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
  frames.push('data: [DONE]\n\n');
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  if (o.delay === 0) {
    res.end(frames.join(''));
    return;
  }
  res.flushHeaders();
  for (const f of frames) {
    await sleep(o.delay);
    if (res.destroyed) return;
    res.write(f);
  }
  res.end();
}
