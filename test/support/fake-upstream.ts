// A fake OpenAI-compatible server (chat, SSE streaming, embeddings, rerank, moderation, models) on
// plain node:http, for engine tests, black-box tests through our server, and the benchmark.
// Everything it answers is deterministic; failures are triggered by server options or by markers
// in the last user message (see `FakeMarkers` below), so tests through our API can reach them too.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { featureChat, wantsFeatures } from './fake-chat-features.js';

/** '500'/'503': answer that status; 'reset': destroy the socket before headers; 'hang': never answer. */
export type FailMode = '500' | '503' | 'reset' | 'hang';

/**
 * A misbehaving upstream, for chat completions (`setFault`); status faults and 'hang' apply to
 * every route. Each models something a real server or network does:
 * - 'stall'              the 200 head, then nothing (a server wedged after accepting)
 * - 'trickle'            streamed: the role and two content chunks, then a `: ping` comment every
 *                        `pingMs` forever; plain: the head and a byte of JSON every `pingMs`, never done
 * - 'garbage'            200 with a body that is not JSON (streamed: `data:` lines that are not JSON)
 * - 'ignore-max-tokens'  produce the `#tokens=N` words (400 without a marker) whatever max_tokens says
 * - 'reset-mid'          plain: the head and half the body, then the socket is destroyed;
 *                        streamed: as `#fail=midstream`
 * - { status, retryAfter?, body? } every route: answer that status (429, 503, a 4xx…) with that
 *                        Retry-After header, and `body` (JSON text) or an overload error as the body
 * - { usage: N }         report N prompt and N completion tokens whatever was produced
 * - { gate }             streamed: the head at once, then the chunks only once `gate` resolves
 * - { pace }             streamed: the head at once, then each frame (role, content…, finish,
 *                        [DONE]) written on its own once `pace(index)` resolves, so a test can hold
 *                        a chunk back until the client has seen the one before
 * - { raw, type?, hold? } every route: 200, `content-type: application/json` (or `type`), with `raw` as the body
 *                        (an answer of the right shape with wrong values, or numbers JSON.stringify
 *                        cannot write, such as 1e999); `hold`: the response is never ended (a server
 *                        that keeps a stream open after its [DONE]), until the client closes it
 * - { huge: bytes }      every route: 200 with a JSON body of that many bytes, sent in 1 MB writes
 */
export type Fault =
  | FailMode
  | 'stall'
  | 'trickle'
  | 'garbage'
  | 'ignore-max-tokens'
  | 'reset-mid'
  | { status: number; retryAfter?: string; body?: string }
  | { usage: number }
  | { gate: Promise<void> }
  | { pace: (frame: number) => Promise<void> }
  | { raw: string; type?: string; hold?: boolean }
  | { huge: number };

export interface FakeUpstreamOptions {
  port?: number;
  host?: string;
  /** The first N requests get 503. */
  failFirst?: number;
  /** Every request fails this way. */
  fail?: FailMode;
  /** Embedding dimension: one for all models, or per model name (unknown models get 768). */
  dimensions?: number | Record<string, number>;
  /** Completion words when neither `#tokens=N` nor max_tokens says otherwise. Default 16. */
  defaultTokens?: number;
  /** Delay before each streamed chunk / non-stream answer when no `#delay` marker says otherwise. */
  delayMs?: number;
  /** Keep a copy of every request in `requests` (default true; the benchmark turns it off). */
  record?: boolean;
  /** Answer embeddings in reverse order (the index field stays right), to test reordering. */
  reverseEmbeddings?: boolean;
  /** Rerank scores as logits in [-5, 5] instead of [0, 1], like some cross-encoder servers. */
  rerankLogits?: boolean;
  /**
   * /rerank as TEI's native route: the documents are `texts` (a body without it is 422, as TEI
   * answers), and the answer is a bare array of {index, score}, highest first.
   */
  teiRerank?: boolean;
  /** Moderation category keys to answer with (default: OpenAI's full set). */
  moderationKeys?: string[];
  /** Model ids for GET /v1/models. */
  models?: string[];
}

export interface RecordedRequest {
  method: string;
  path: string;
  body: unknown;
  headers: IncomingMessage['headers'];
}

export interface FakeUpstream {
  /** Base URL including /v1, e.g. http://127.0.0.1:PORT/v1 */
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Requests whose client closed the connection before the response was finished. */
  readonly aborted: number;
  /** Fails the next `count` requests (all of them when count is omitted) that way; null clears. */
  setFailMode(mode: FailMode | null, count?: number): void;
  /** Every request from now on misbehaves this way (a function: chosen per request, e.g. at random); null clears. */
  setFault(fault: Fault | null | (() => Fault | null)): void;
  /** Requests answered, by the fault applied to them (JSON of the fault; 'none' for none). */
  readonly faults: Record<string, number>;
  /** Clears `requests` and the `aborted` counter. */
  reset(): void;
  close(): Promise<void>;
}

// The categories OpenAI's omni-moderation models answer (its schema requires all thirteen).
const OPENAI_MODERATION_KEYS = [
  'hate',
  'hate/threatening',
  'harassment',
  'harassment/threatening',
  'self-harm',
  'self-harm/intent',
  'self-harm/instructions',
  'sexual',
  'sexual/minors',
  'violence',
  'violence/graphic',
  'illicit',
  'illicit/violent',
];

interface Markers {
  tokens?: number;
  delay?: number;
  fail?: '500' | 'reset' | 'midstream';
  /** The answer's word of this index is 'kill' (which the fake moderation flags as violence). */
  flagWord?: number;
  /** Reasoning words (`r0 r1 …`) sent before the answer, as a reasoning model's upstream does. */
  reasoning?: number;
  /** The field the reasoning comes in: vLLM's and llama.cpp's `reasoning_content` unless told. */
  reasoningField?: string;
  noUsage: boolean;
}

function readMarkers(messages: unknown): Markers {
  const out: Markers = { noUsage: false };
  if (!Array.isArray(messages)) return out;
  let text: string | undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown };
    if (m?.role === 'user' && typeof m.content === 'string') {
      text = m.content;
      break;
    }
  }
  // Most requests carry no marker: skip the regexes then.
  if (!text?.includes('#')) return out;
  const tokens = /#tokens=(\d+)/.exec(text);
  if (tokens) out.tokens = Number(tokens[1]);
  const delay = /#delay=(\d+)/.exec(text);
  if (delay) out.delay = Number(delay[1]);
  const fail = /#fail=(500|reset|midstream)/.exec(text);
  if (fail) out.fail = fail[1] as Markers['fail'];
  out.noUsage = text.includes('#nousage');
  const flag = /#flag=(\d+)/.exec(text);
  if (flag) out.flagWord = Number(flag[1]);
  const reasoning = /#reasoning=(\d+)/.exec(text);
  if (reasoning) out.reasoning = Number(reasoning[1]);
  const field = /#reasoning-field=(\w+)/.exec(text);
  if (field) out.reasoningField = field[1];
  return out;
}

function countWords(text: string): number {
  let n = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const space = c === 32 || c === 10 || c === 9 || c === 13;
    if (!space && !inWord) n++;
    inWord = !space;
  }
  return n;
}

/** Deterministic prompt count: words plus 4 per message (different from o200k on purpose, so
 * tests can tell upstream usage from a locally counted fallback). */
function promptTokensOf(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let n = 0;
  for (const m of messages) n += 4 + (typeof m?.content === 'string' ? countWords(m.content) : 0);
  return n;
}

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A unit vector seeded by the text's hash (mulberry32), so equal texts get equal vectors. */
export function fakeEmbedding(text: string, dimensions: number): number[] {
  let seed = fnv1a(text);
  const v = new Array<number>(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const x = ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
    v[i] = x;
    norm += x * x;
  }
  const inv = 1 / Math.sqrt(norm || 1);
  for (let i = 0; i < dimensions; i++) v[i] = v[i]! * inv;
  return v;
}

function words(text: string): Set<string> {
  return new Set(
    text
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter(Boolean),
  );
}

/** Share of the query's words found in the document: 0 to 1. */
export function fakeRerankScore(query: string, doc: string): number {
  const q = words(query);
  if (q.size === 0) return 0;
  const d = words(doc);
  let hit = 0;
  for (const w of q) if (d.has(w)) hit++;
  return hit / q.size;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null } });
}

/**
 * Starts the fake on loopback (port 0 by default: a free one). Markers read from the last user
 * message of a chat request:
 * - `#tokens=N`       produce N words (still capped by max_tokens; finish_reason 'length' when capped)
 * - `#delay=MS`       wait MS before each streamed chunk, and before a non-stream answer
 * - `#fail=500`       answer 500
 * - `#fail=reset`     destroy the socket before any header
 * - `#fail=midstream` stream the role chunk and two content chunks, then destroy the socket
 * - `#nousage`        leave usage out, in both modes
 * Tools, response_format, n > 1 and logprobs are answered by ./fake-chat-features.ts.
 * - `#flag=N`         word N of the answer is 'kill' instead of `wN`
 * - `#reasoning=N`    N reasoning words `r0 r1 …` before the answer (not with the features above):
 *                     in `message.reasoning_content`; streamed, N chunks of `delta.reasoning_content`
 *                     between the role chunk and the content; reported usage counts them as output
 * - `#reasoning-field=NAME` the reasoning in field NAME instead (`reasoning`: newer vLLM, Ollama)
 * Moderation flags a text with the word 'kill' (violence) or 'hateful' (hate, harassment).
 */
export async function startFakeUpstream(opts: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const host = opts.host ?? '127.0.0.1';
  const record = opts.record ?? true;
  const defaultTokens = opts.defaultTokens ?? 16;
  const requests: RecordedRequest[] = [];
  let aborted = 0;
  let failFirst = opts.failFirst ?? 0;
  let failMode: FailMode | null = opts.fail ?? null;
  let failCount = Infinity;
  let seq = 0;
  const sockets = new Set<Socket>();
  let fault: Fault | null | (() => Fault | null) = null;
  const faults: Record<string, number> = {};
  const pingMs = 50;
  function takeFault(): Fault | null {
    const f = typeof fault === 'function' ? fault() : fault;
    const name = f === null ? 'none' : typeof f === 'string' ? f : 'gate' in f ? 'gate' : 'pace' in f ? 'pace' : JSON.stringify(f);
    faults[name] = (faults[name] ?? 0) + 1;
    return f;
  }
  /** Writes `piece` every pingMs until the client goes away. */
  async function trickle(res: ServerResponse, piece: string) {
    while (!res.destroyed) {
      res.write(piece);
      await sleep(pingMs);
    }
  }

  function dimensionsFor(model: unknown, requested: unknown): number {
    if (typeof requested === 'number' && requested > 0) return requested;
    const d = opts.dimensions;
    if (typeof d === 'number') return d;
    if (d && typeof model === 'string' && d[model]) return d[model]!;
    return 768;
  }

  /** Returns the failure to apply to this request, if any, and counts it down. */
  function takeFailure(): FailMode | null {
    if (failFirst > 0) {
      failFirst--;
      return '503';
    }
    if (failMode && failCount > 0) {
      const mode = failMode;
      if (--failCount === 0) failMode = null;
      return mode;
    }
    return null;
  }

  async function chat(
    req: IncomingMessage,
    res: ServerResponse,
    body: Record<string, unknown>,
    state: { selfDestroyed: boolean },
    fault: Fault | null,
  ) {
    const markers = readMarkers(body.messages);
    const streamed = body.stream === true;
    if (fault === 'stall') {
      res.writeHead(200, { 'content-type': streamed ? 'text/event-stream' : 'application/json' });
      res.flushHeaders();
      return;
    }
    if (fault === 'garbage') {
      const text = streamed
        ? 'data: {"choices": [{"delta": {"content": "w0"\n\ndata: <html>oops</html>\n\n'
        : '<html>502 Bad Gateway</html>';
      res.writeHead(200, { 'content-type': streamed ? 'text/event-stream' : 'application/json' });
      res.end(text);
      return;
    }
    if (fault === 'trickle' && !streamed) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id": "chatcmpl-trickle", ');
      return trickle(res, ' ');
    }
    if (fault === 'reset-mid' && streamed) markers.fail = 'midstream';
    const delay = markers.delay ?? opts.delayMs ?? 0;
    if (markers.fail === '500') return sendError(res, 500, 'simulated failure');
    if (markers.fail === 'reset') {
      state.selfDestroyed = true;
      req.socket.destroy();
      return;
    }
    const word = (i: number) => (i === markers.flagWord ? 'kill' : `w${i}`);
    const maxTokens = (body.max_tokens ?? body.max_completion_tokens) as number | undefined;
    const ignoresMax = fault === 'ignore-max-tokens';
    const wanted = markers.tokens ?? (ignoresMax ? 400 : defaultTokens);
    const cap = ignoresMax ? Infinity : typeof maxTokens === 'number' ? maxTokens : 16;
    const n = Math.min(cap, wanted);
    const finishReason = cap < wanted ? 'length' : 'stop';
    const id = `chatcmpl-fake${++seq}`;
    const created = Math.floor(Date.now() / 1000);
    const model = typeof body.model === 'string' ? body.model : 'fake';
    const thoughts = markers.reasoning ?? 0;
    const reasoningField = markers.reasoningField ?? 'reasoning_content';
    const usage = markers.noUsage
      ? undefined
      : { prompt_tokens: promptTokensOf(body.messages), completion_tokens: n + thoughts, total_tokens: 0 };
    if (usage && fault !== null && typeof fault === 'object' && 'usage' in fault) {
      usage.prompt_tokens = fault.usage;
      usage.completion_tokens = fault.usage;
    }
    if (usage) usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    if (fault === null && wantsFeatures(body)) {
      return featureChat(res, body, {
        id,
        created,
        model,
        words: wanted,
        cap,
        delay,
        promptTokens: promptTokensOf(body.messages),
        noUsage: markers.noUsage,
        flagWord: markers.flagWord,
      });
    }

    if (body.stream !== true) {
      if (delay > 0) await sleep(delay);
      if (res.destroyed) return;
      let content = '';
      for (let i = 0; i < n; i++) content += (i === 0 ? '' : ' ') + word(i);
      const out: Record<string, unknown> = {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content }, logprobs: null, finish_reason: finishReason }],
      };
      if (thoughts > 0) {
        const message = (out.choices as { message: Record<string, unknown> }[])[0]!.message;
        message[reasoningField] = Array.from({ length: thoughts }, (_, i) => `r${i}`).join(' ');
      }
      if (usage) out.usage = usage;
      if (fault === 'reset-mid') {
        const text = JSON.stringify(out);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.write(text.slice(0, text.length >> 1));
        await sleep(20);
        state.selfDestroyed = true;
        req.socket.destroy();
        return;
      }
      return sendJson(res, 200, out);
    }

    // OpenAI's framing: role chunk, content chunks, an empty-delta chunk with finish_reason, then
    // (with include_usage) a chunk with choices: [] and the usage, then [DONE]. With include_usage
    // every other chunk carries "usage": null.
    const includeUsage = (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true && !!usage;
    const head = `{"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},`;
    const tail = includeUsage ? ',"usage":null}' : '}';
    const frame = (delta: string, finish: string | null) =>
      `data: ${head}"choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]${tail}\n\n`;
    const frames: string[] = [frame('{"role":"assistant","content":""}', null)];
    for (let i = 0; i < thoughts; i++) frames.push(frame(`{"${reasoningField}":"${i === 0 ? '' : ' '}r${i}"}`, null));
    const contentFrames = markers.fail === 'midstream' ? Math.min(2, n) : n;
    for (let i = 0; i < contentFrames; i++) frames.push(frame(`{"content":"${i === 0 ? '' : ' '}${word(i)}"}`, null));
    if (markers.fail !== 'midstream') {
      frames.push(frame('{}', finishReason));
      if (includeUsage) frames.push(`data: ${head}"choices":[],"usage":${JSON.stringify(usage)}}\n\n`);
      frames.push('data: [DONE]\n\n');
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    if (fault === 'trickle') {
      res.flushHeaders();
      res.write(frames.slice(0, 3).join(''));
      return trickle(res, ': ping\n\n');
    }
    if (fault !== null && typeof fault === 'object' && 'gate' in fault) {
      res.flushHeaders();
      await fault.gate;
      if (res.destroyed) return;
    }
    const pace = fault !== null && typeof fault === 'object' && 'pace' in fault ? fault.pace : undefined;
    if (delay === 0 && markers.fail !== 'midstream' && !pace) {
      res.end(frames.join(''));
      return;
    }
    // Headers go out at once, as real servers do, so a delay is a gap in the body, not a slow start.
    res.flushHeaders();
    for (const [i, f] of frames.entries()) {
      if (delay > 0) await sleep(delay);
      if (pace) await pace(i);
      if (res.destroyed) return;
      res.write(f);
    }
    if (markers.fail === 'midstream') {
      // Let the chunks leave before cutting the connection, as a crashing server would.
      await sleep(Math.max(delay, 20));
      state.selfDestroyed = true;
      req.socket.destroy();
      return;
    }
    res.end();
  }

  function embeddings(res: ServerResponse, body: Record<string, unknown>) {
    const input = typeof body.input === 'string' ? [body.input] : Array.isArray(body.input) ? (body.input as unknown[]) : null;
    if (!input || input.some((s) => typeof s !== 'string')) return sendError(res, 400, "'input' must be a string or an array of strings");
    const dims = dimensionsFor(body.model, body.dimensions);
    let tokens = 0;
    const data = (input as string[]).map((text, index) => {
      tokens += Math.max(1, countWords(text));
      const vector = fakeEmbedding(text, dims);
      const embedding = body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
      return { object: 'embedding', index, embedding };
    });
    if (opts.reverseEmbeddings) data.reverse();
    sendJson(res, 200, { object: 'list', data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
  }

  function teiRerank(res: ServerResponse, body: Record<string, unknown>) {
    const { query, texts } = body;
    if (!Array.isArray(texts)) {
      res.writeHead(422, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('Failed to deserialize the JSON body into the target type: missing field `texts` at line 1 column 120');
      return;
    }
    const scored = texts.map((t, index) => ({ index, score: fakeRerankScore(String(query), String(t)) }));
    sendJson(
      res,
      200,
      scored.sort((a, b) => b.score - a.score),
    );
  }

  function rerank(res: ServerResponse, body: Record<string, unknown>) {
    if (opts.teiRerank) return teiRerank(res, body);
    const query = body.query;
    const docs = body.documents;
    if (typeof query !== 'string' || !Array.isArray(docs)) return sendError(res, 400, "'query' and 'documents' are required");
    const texts = docs.map((d) => (typeof d === 'string' ? d : String((d as { text?: unknown })?.text ?? '')));
    let results = texts.map((text, index) => {
      const s = fakeRerankScore(query, text);
      return { index, relevance_score: opts.rerankLogits ? s * 10 - 5 : s, text };
    });
    results.sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
    if (typeof body.top_n === 'number') results = results.slice(0, body.top_n);
    const returnDocs = body.return_documents !== false;
    const tokens = texts.reduce((n, t) => n + countWords(query) + countWords(t), 0);
    sendJson(res, 200, {
      id: `rerank-fake${++seq}`,
      model: body.model,
      results: results.map((r) =>
        returnDocs
          ? { index: r.index, relevance_score: r.relevance_score, document: { text: r.text } }
          : { index: r.index, relevance_score: r.relevance_score },
      ),
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  }

  function moderations(res: ServerResponse, body: Record<string, unknown>) {
    const inputs = typeof body.input === 'string' ? [body.input] : Array.isArray(body.input) ? (body.input as unknown[]).map(String) : null;
    if (!inputs) return sendError(res, 400, "'input' is required");
    const keys = opts.moderationKeys ?? OPENAI_MODERATION_KEYS;
    const results = inputs.map((text) => {
      const fired = new Set<string>();
      if (/\bkill\b/i.test(text)) fired.add('violence');
      if (/\bhateful\b/i.test(text)) fired.add('hate').add('harassment');
      const categories: Record<string, boolean> = {};
      const scores: Record<string, number> = {};
      for (const k of keys) {
        categories[k] = fired.has(k);
        scores[k] = fired.has(k) ? 0.97 : 0.001;
      }
      return { flagged: fired.size > 0, categories, category_scores: scores };
    });
    sendJson(res, 200, { id: `modr-fake${++seq}`, model: body.model, results });
  }

  const server = createServer((req, res) => {
    const state = { selfDestroyed: false };
    // 'close' before the response finished, and not by our own hand: the client went away.
    res.on('close', () => {
      if (!res.writableFinished && !state.selfDestroyed) aborted++;
    });
    const path = (req.url ?? '/').split('?')[0]!;
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      if (raw) {
        try {
          body = JSON.parse(raw) as Record<string, unknown>;
        } catch {
          return sendError(res, 400, 'invalid JSON');
        }
      }
      if (record) requests.push({ method: req.method ?? 'GET', path, body, headers: req.headers });

      const chosen = takeFault();
      if (chosen !== null && typeof chosen === 'object' && 'status' in chosen) {
        const text = chosen.body ?? JSON.stringify({ error: { message: 'simulated overload', type: 'server_error', code: null } });
        res.writeHead(chosen.status, {
          'content-type': 'application/json',
          ...(chosen.retryAfter ? { 'retry-after': chosen.retryAfter } : {}),
        });
        res.end(text);
        return;
      }
      if (chosen !== null && typeof chosen === 'object' && 'raw' in chosen) {
        res.writeHead(200, { 'content-type': chosen.type ?? 'application/json' });
        if (chosen.hold) res.write(chosen.raw);
        else res.end(chosen.raw);
        return;
      }
      if (chosen !== null && typeof chosen === 'object' && 'huge' in chosen) {
        res.writeHead(200, { 'content-type': 'application/json' });
        const mb = Buffer.alloc(1024 * 1024, 'a');
        res.write('{"pad":"');
        let sent = 0;
        const more = () => {
          while (sent < chosen.huge && !res.destroyed) {
            sent += mb.length;
            if (!res.write(mb)) return void res.once('drain', more);
          }
          if (!res.destroyed) res.end('"}');
        };
        res.on('error', () => {});
        more();
        return;
      }
      const failure = takeFailure() ?? (chosen === 'hang' || chosen === 'reset' || chosen === '500' || chosen === '503' ? chosen : null);
      if (failure === 'hang') return;
      if (failure === 'reset') {
        state.selfDestroyed = true;
        req.socket.destroy();
        return;
      }
      if (failure) return sendError(res, Number(failure), 'simulated failure');

      if (req.method === 'GET' && (path === '/v1/models' || path === '/models')) {
        const created = 1_700_000_000;
        return sendJson(res, 200, {
          object: 'list',
          data: (opts.models ?? ['fake-chat', 'fake-embed', 'fake-rerank', 'fake-moderation']).map((id) => ({
            id,
            object: 'model',
            created,
            owned_by: 'fake',
          })),
        });
      }
      if (req.method !== 'POST') return sendError(res, 404, 'not found');
      switch (path) {
        case '/v1/chat/completions':
          chat(req, res, body, state, chosen).catch(() => res.destroy());
          return;
        case '/v1/embeddings':
          return embeddings(res, body);
        case '/v1/rerank':
        case '/rerank':
          return rerank(res, body);
        case '/v1/moderations':
          return moderations(res, body);
        default:
          return sendError(res, 404, 'not found');
      }
    });
  });
  // Long keep-alive so the benchmark's client pool is not churned by idle closes.
  server.keepAliveTimeout = 65_000;
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}/v1`,
    port,
    requests,
    get aborted() {
      return aborted;
    },
    setFailMode(mode, count) {
      failMode = mode;
      failCount = mode === null ? 0 : (count ?? Infinity);
    },
    setFault(f) {
      fault = f;
    },
    faults,
    reset() {
      requests.length = 0;
      aborted = 0;
    },
    close() {
      return new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      });
    },
  };
}
