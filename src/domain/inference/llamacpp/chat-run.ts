// One choice of a llama.cpp chat call that uses tools, log-probabilities or several choices, as
// events: text deltas (with their tokens' log-probabilities), the pieces of a tool call, and at the
// end its finish reason and output tokens. (A plain call runs the engine's own loop, without the
// generator hop per token.) ./chat-features.ts has the parts.
import { randomBytes } from 'node:crypto';
import type { Llama, LlamaContextSequence, LlamaGrammar, Token } from 'node-llama-cpp';
import type { EngineChatRequest, EngineChatResult, EngineChoice, EngineStreamEvent, FinishReason, TokenLogprob } from '../engine.js';
import {
  callSyntax,
  continueFrom,
  grammarState,
  grammarStops,
  namesGrammar,
  schemaGrammar,
  tokenLogprob,
  usesTools,
} from './chat-features.js';
import { CompletionText } from './completion-text.js';
import { abortReason, type ChatRunner } from './runners.js';
import { getRuntime } from './runtime.js';

export type ChoiceEvent =
  | { type: 'delta'; content: string; logprobs?: TokenLogprob[]; tokens?: number }
  | { type: 'tool_call'; index: number; id?: string; name?: string; arguments: string };

export interface ChoiceEnd {
  finishReason: FinishReason;
  completionTokens: number;
}

export interface ChoiceContext {
  runner: ChatRunner;
  llama: Llama;
  modelId: string;
  seq: LlamaContextSequence;
  prompt: Token[];
  req: EngineChatRequest;
  seed: number;
  /** The response format's grammar. */
  format: LlamaGrammar | undefined;
  signal: AbortSignal;
  stats: { generatedTokens: number };
}

/**
 * The sampling options of a request: OpenAI's parameters, and llama.cpp's top-k, min-p and repeat
 * penalty when asked for (off by default). Penalties weigh the answer's tokens.
 */
export function samplingOf(req: EngineChatRequest, seed: number, punish: () => Token[]) {
  const penalised = (req.presencePenalty ?? 0) !== 0 || (req.frequencyPenalty ?? 0) !== 0 || req.repetitionPenalty !== undefined;
  return {
    temperature: req.temperature ?? 1,
    topP: req.topP ?? 1,
    topK: req.topK ?? 0,
    minP: req.minP ?? 0,
    seed,
    yieldEogToken: true,
    // Without penalties no callback runs per token.
    ...(penalised
      ? {
          repeatPenalty: {
            punishTokens: punish,
            maxPunishTokens: req.maxTokens,
            penalty: req.repetitionPenalty ?? 1,
            presencePenalty: req.presencePenalty ?? 0,
            frequencyPenalty: req.frequencyPenalty ?? 0,
          },
        }
      : {}),
  } as const;
}

export async function* runChoice(c: ChoiceContext): AsyncGenerator<ChoiceEvent, ChoiceEnd> {
  const { runner, req, seq, signal } = c;
  const model = runner.model;
  const ends = (t: Token) => model.isEogToken(t) || runner.stopTokens.has(t);
  // Every choice starts from an empty sequence: one caller's cache never shapes another's output.
  await seq.eraseContextTokenRanges([{ start: 0, end: seq.nextTokenIndex }]);
  const tools = usesTools(req) ? req.tools! : undefined;
  const forced = !!tools && (req.toolChoice === 'required' || typeof req.toolChoice === 'object');
  const syntax = tools ? callSyntax(runner) : undefined;
  const out: Token[] = [];
  const sampling = samplingOf(req, c.seed, () => out);
  let typed = '';

  if (!forced) {
    const stops = [...(req.stop ?? []).filter((s) => s.length > 0), ...runner.stopTexts];
    const completion = new CompletionText(model, stops, runner.pieces, grammarStops(c.format));
    const top = req.topLogprobs ?? 0;
    // Log-probabilities of tokens whose text is not out yet: they go with the next delta.
    let pendingLp: TokenLogprob[] = [];
    // With tools, text that may still become the call prefix is held back.
    let detecting = !!syntax;
    let held = '';
    // How many of `out` went out with a delta: each delta says how many tokens it carries.
    let given = 0;
    let finish: FinishReason | undefined;
    let calling = false;
    const state = grammarState(runner, c.format);
    for await (const o of continueFrom(seq, c.prompt, { ...sampling, grammarEvaluationState: state }, !!req.logprobs, signal)) {
      if (signal.aborted) throw abortReason(signal);
      if (ends(o.token)) {
        finish = 'stop';
        break;
      }
      c.stats.generatedTokens++;
      out.push(o.token);
      if (req.logprobs) pendingLp.push(tokenLogprob(runner, o.token, o.probabilities, top));
      let text = completion.push(o.token);
      if (detecting) {
        const raw = model.detokenize(completion.tokens, true).trimStart();
        if (raw.startsWith(syntax!.prefix)) {
          typed = raw.slice(syntax!.prefix.length);
          calling = true;
          break;
        }
        if (syntax!.prefix.startsWith(raw) && out.length < req.maxTokens) {
          held += text;
          continue;
        }
        detecting = false;
        text = held + text;
        held = '';
      }
      if (text) {
        yield { type: 'delta', content: text, tokens: out.length - given, ...(req.logprobs ? { logprobs: pendingLp } : {}) };
        given = out.length;
        pendingLp = [];
      }
      if (completion.stopped) {
        finish = 'stop';
        break;
      }
      if (out.length >= req.maxTokens) {
        finish = 'length';
        break;
      }
    }
    if (signal.aborted) throw abortReason(signal);
    if (!calling) {
      const tail = held + completion.finish();
      // The grammar's closing newlines are neither sent nor billed, nor their log-probabilities.
      const billed = out.length - completion.tailTokens;
      if (tail) {
        const lp = req.logprobs ? { logprobs: pendingLp.slice(0, Math.max(0, billed - given)) } : {};
        yield { type: 'delta', content: tail, tokens: billed - given, ...lp };
      }
      return { finishReason: completion.ended ? 'stop' : (finish ?? 'stop'), completionTokens: billed };
    }
  } else {
    // The call is forced: its prefix goes in the model's mouth.
    out.push(...syntax!.prefixTokens);
  }

  // ---- the call: its name under a grammar of the tools' names, its arguments under its schema ----
  const allowed = typeof req.toolChoice === 'object' ? [req.toolChoice.function.name] : tools!.map((t) => t.function.name);
  const candidates = allowed.filter((n) => n.startsWith(typed) && n.length > typed.length);
  let name = allowed.find((n) => n === typed);
  if (!name && candidates.length === 1) {
    name = candidates[0]!;
    out.push(...model.tokenize(name.slice(typed.length), false, 'trimLeadingSpace'));
  } else if (!name && candidates.length > 1) {
    const grammar = await namesGrammar(
      c.llama,
      candidates.map((n) => n.slice(typed.length)),
    );
    const state = grammarState(runner, grammar);
    // The name is written whole, whatever max_tokens leaves: cut inside it, the call could be
    // neither delivered nor billed. The grammar ends it within a name's length (at most 64 ASCII
    // characters); the bound only guards against a grammar that would not.
    const longest = Math.max(...candidates.map((n) => n.length - typed.length));
    const nameTokens: Token[] = [];
    for await (const o of continueFrom(seq, [...c.prompt, ...out], { ...sampling, grammarEvaluationState: state }, false, signal)) {
      if (signal.aborted) throw abortReason(signal);
      if (ends(o.token)) break;
      c.stats.generatedTokens++;
      nameTokens.push(o.token);
      if (nameTokens.length >= longest) break;
    }
    out.push(...nameTokens);
    const chosen = typed + model.detokenize(nameTokens, false);
    name = allowed.find((n) => n === chosen);
  }
  // The call's tokens (its prefix, put in the model's mouth when the call is forced, and its name)
  // count as output, but never more than max_tokens: the call is billed at most what was asked.
  const spent = () => Math.min(out.length, req.maxTokens);
  // The model wrote no tool's name after the prefix (a call it chose, with tool_choice auto).
  if (!name) return { finishReason: 'length', completionTokens: spent() };
  const tool = tools!.find((t) => t.function.name === name)!;
  // The call goes out with its name even when max_tokens runs out before its arguments, as OpenAI's
  // does (arguments cut, finish reason length): an answer of nothing billed at 0 or 1 token hid
  // the prefix and name the model was made to write.
  yield { type: 'tool_call', index: 0, id: `call_${randomBytes(12).toString('base64url')}`, name, arguments: '' };
  out.push(...syntax!.paramsPrefix);
  if (out.length >= req.maxTokens) return { finishReason: 'length', completionTokens: spent() };
  const index = tools!.indexOf(tool);
  const grammar = await schemaGrammar(c.llama, tool.function.parameters, `tools[${index}].function.parameters`, c.modelId);
  const args = new CompletionText(model, [], runner.pieces, grammarStops(grammar));
  const state = grammarState(runner, grammar);
  let finish: FinishReason = 'tool_calls';
  for await (const o of continueFrom(seq, [...c.prompt, ...out], { ...sampling, grammarEvaluationState: state }, false, signal)) {
    if (signal.aborted) throw abortReason(signal);
    if (ends(o.token)) break;
    c.stats.generatedTokens++;
    out.push(o.token);
    const piece = args.push(o.token);
    if (piece) yield { type: 'tool_call', index: 0, arguments: piece };
    if (args.stopped) break;
    if (out.length >= req.maxTokens) {
      finish = 'length';
      break;
    }
  }
  if (signal.aborted) throw abortReason(signal);
  const tail = args.finish().trimEnd();
  if (tail) yield { type: 'tool_call', index: 0, arguments: tail };
  // Arguments whole when max_tokens ran out in the grammar's closing newlines: the call is complete.
  if (args.ended) finish = 'tool_calls';
  return { finishReason: finish, completionTokens: Math.min(out.length - args.tailTokens, req.maxTokens) };
}

/** What every choice of a call shares; `seed` is the first choice's. */
export type ChoiceBase = Omit<ChoiceContext, 'llama'>;

/** The choices of a call with tools, log-probabilities or n > 1, one after the other on one slot. */
async function* choices(base: ChoiceBase) {
  const llama = await getRuntime();
  for (let choice = 0; choice < (base.req.n ?? 1); choice++) {
    // Each choice its own seed (the request's plus its index): n choices differ, and repeat.
    yield { choice, events: runChoice({ ...base, llama, seed: (base.seed + choice) % 2 ** 31 }) };
  }
}

export async function chatChoices(base: ChoiceBase): Promise<EngineChatResult> {
  const out: EngineChoice[] = [];
  let completionTokens = 0;
  for await (const { events } of choices(base)) {
    const choice: EngineChoice = { content: '', finishReason: 'stop' };
    if (base.req.logprobs) choice.logprobs = [];
    try {
      for (let next = await events.next(); ; next = await events.next()) {
        if (next.done) {
          choice.finishReason = next.value.finishReason;
          completionTokens += next.value.completionTokens;
          break;
        }
        const e = next.value;
        if (e.type === 'delta') {
          choice.content += e.content;
          if (e.logprobs) choice.logprobs?.push(...e.logprobs);
        } else {
          const calls = (choice.toolCalls ??= []);
          if (e.id) calls[e.index] = { id: e.id, type: 'function', function: { name: e.name ?? '', arguments: '' } };
          const call = calls[e.index];
          if (call) call.function.arguments += e.arguments;
        }
      }
    } finally {
      // On an error, stop the choice's evaluation before the slot goes back to the pool.
      await events.return(undefined as never);
    }
    out.push(choice);
  }
  const promptTokens = base.prompt.length;
  const usage = { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
  return { ...out[0]!, usage, ...(out.length > 1 ? { choices: out } : {}) };
}

export async function* streamChoices(base: ChoiceBase): AsyncGenerator<EngineStreamEvent> {
  const n = base.req.n ?? 1;
  let completionTokens = 0;
  let last: FinishReason = 'stop';
  for await (const { choice, events } of choices(base)) {
    const at = n > 1 ? { choice } : {};
    try {
      for (let next = await events.next(); ; next = await events.next()) {
        if (next.done) {
          completionTokens += next.value.completionTokens;
          last = next.value.finishReason;
          break;
        }
        yield { ...next.value, ...at };
        // The consumer may have gone away while it held the event: no further token for it.
        if (base.signal.aborted) throw abortReason(base.signal);
      }
    } finally {
      // A consumer that stops early (or an error) stops the choice's evaluation before the slot is
      // given back.
      await events.return(undefined as never);
    }
    if (n > 1) yield { type: 'choice_finish', choice, finishReason: last };
  }
  const promptTokens = base.prompt.length;
  yield { type: 'finish', finishReason: last, usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens } };
}
