// Content filtering (issue 16): a chat model whose catalog entry names a moderation model
// (`safety: { moderation_model, input, output, window_chars }`) has its input checked before
// generation and its answer checked in windows before any of it is sent.
//
// - Input: the messages' text (every role: the caller writes them all) is moderated before the
//   chat is admitted; flagged, the call is refused with 400 `content_filter` (param `messages`,
//   the categories named) and nothing is generated or billed but the moderation itself.
// - Output: the engine of the call is wrapped (the only hook into InferenceService, so that the
//   use cases stay as they are). The answer is cut into windows of `window_chars` characters; each
//   window is moderated together with the window before it (a phrase across a boundary is seen
//   whole) and only sent once it passed. The window that flags is withheld and the answer ends
//   there with finish reason `content_filter`: a stream stops the model and sends the finish
//   chunk; a plain answer carries the text before that window. Either way the answer is billed
//   for its prompt and the tokens of the text delivered.
// - Reasoning (a reasoning model's `reasoning_content`) is not moderated and not relayed: it is
//   withheld (marked so, for InferenceService), and billed as output all the same, since the model
//   produced it. Screening it would cost a moderation call per window of text the client may never
//   need, and a flag there would end answers whose own text is clean.
// - Every moderation call is billed like a call of the moderation model (its own price, free by
//   default) on the caller's account, as a usage event of its own, and counted in the metrics;
//   it does not count against the caller's rate limits (the chat call already did). A moderation
//   call that fails fails the chat call: nothing unchecked is sent.
import type { ChatModelConfig, ModerationModelConfig, SafetyConfig } from '../catalog/model.js';
import type { Catalog } from '../catalog/catalog.js';
import { DomainError } from '../errors.js';
import { completionAtMost, logprobsWithin, outputText, withinMaxTokens } from './chat-options.js';
import type {
  ContentFilterVerdict,
  Engine,
  EngineChatRequest,
  EngineChatResult,
  EngineChoice,
  EngineStreamEvent,
  Usage,
} from './engine.js';
import type { Caller, EngineRegistry, Metering } from './inference-types.js';

/** What a content filter hook receives and gives back: a prepared chat call. */
export interface PreparedChat {
  model: ChatModelConfig;
  request: EngineChatRequest;
  engine: Engine;
}

/** A moderation verdict on one text: flagged, and the names of the categories that fired. */
type Check = (text: string) => Promise<ContentFilterVerdict>;

const PASSED: ContentFilterVerdict = { flagged: false, categories: [] };

/**
 * The content filter of every chat model with `safety`: `screen` runs between a chat call's
 * validation and its admission.
 */
export class ContentFilter {
  constructor(
    private readonly catalog: Catalog,
    private readonly engines: EngineRegistry,
    /** Billing (and metrics) without rate limits: see the module's first lines. */
    private readonly metering: Metering,
  ) {}

  /**
   * Checks the input of a chat call whose model has `safety.input` (a flagged input throws 400
   * content_filter), and gives back the call with its engine wrapped when the model has
   * `safety.output`. A model without `safety` is given back as it is, at once (not a promise: most
   * chat calls come this way).
   */
  screen<P extends PreparedChat>(caller: Caller, prepared: P, signal: AbortSignal): P | Promise<P> {
    if (!prepared.model.safety) return prepared;
    return this.screenSafety(caller, prepared, signal, prepared.model.safety);
  }

  private async screenSafety<P extends PreparedChat>(
    caller: Caller,
    prepared: P,
    signal: AbortSignal,
    safety: NonNullable<P['model']['safety']>,
  ): Promise<P> {
    const moderator = this.catalog.require(safety.moderation_model, 'moderation');
    // The chat call's rate-limit headers and access line stay the chat call's.
    const quiet: Caller = { ...caller, onRateLimit: undefined, onAdmitted: undefined, onSettled: undefined };
    const check: Check = (text) => this.moderate(quiet, moderator, text, prepared.request.user ?? null, signal);
    if (safety.input) {
      const text = prepared.request.messages.map((m) => m.content).join('\n\n');
      const verdict = await check(text);
      if (verdict.flagged) {
        throw new DomainError(
          'content_filter',
          `The messages were flagged by the content filter (${verdict.categories.join(', ') || 'unsafe'}); nothing was generated.`,
          { param: 'messages' },
        );
      }
    }
    if (!safety.output) return prepared;
    return { ...prepared, engine: filteredEngine(prepared.engine, check, safety) };
  }

  /**
   * One moderation of `text` on the moderation model, billed as its own call; a text longer than
   * the model takes is checked in pieces (flagged when any piece is).
   */
  private async moderate(
    caller: Caller,
    moderator: ModerationModelConfig,
    text: string,
    endUser: string | null,
    signal: AbortSignal,
  ): Promise<ContentFilterVerdict> {
    if (text.trim() === '') return PASSED;
    const engine = this.engines.get(moderator.id);
    const categories = new Set<string>();
    let flagged = false;
    for await (const { piece, tokens } of pieces(text, moderator.specifications.max_tokens, (t) => engine.countTokens(t))) {
      const ticket = await this.metering.admit({
        caller,
        model: moderator,
        promptTokens: tokens,
        requestedOutputTokens: null,
        maxOutputTokens: 0,
        endUser,
      });
      let result: Awaited<ReturnType<Engine['moderate']>>[number];
      try {
        [result] = (await engine.moderate([piece], signal)) as [Awaited<ReturnType<Engine['moderate']>>[number]];
      } catch (err) {
        await ticket.settle(zero, signal.aborted ? 'client_disconnected' : 'failed');
        throw err;
      }
      // Billed as a moderation call is: the text's tokens at most (InferenceService.moderate).
      const billed = Math.max(0, Math.min(Math.floor(result.promptTokens) || 0, tokens));
      await ticket.settle({ promptTokens: billed, completionTokens: 0, totalTokens: billed }, 'completed');
      if (result.flagged) {
        flagged = true;
        for (const [name, fired] of Object.entries(result.categories)) if (fired) categories.add(name);
      }
    }
    return { flagged, categories: [...categories].sort() };
  }
}

const zero: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/**
 * `text` in consecutive pieces of at most `limit` tokens each (cut at characters; a piece that is
 * too long is halved until it fits), with their token counts.
 */
async function* pieces(
  text: string,
  limit: number,
  count: (text: string) => number | Promise<number>,
): AsyncGenerator<{ piece: string; tokens: number }> {
  let at = 0;
  // A token covers at least one character, almost always several: start at 4 characters a token.
  let size = limit * 4;
  while (at < text.length) {
    const piece = text.slice(at, at + size);
    const tokens = await count(piece);
    if (tokens > limit && size > 1) {
      size = Math.max(1, Math.floor(size / 2));
      continue;
    }
    yield { piece, tokens };
    at += piece.length;
  }
}

/** The text before the first window (of `windowChars`) whose check flags, and the verdict. */
async function checkWindows(text: string, windowChars: number, check: Check): Promise<{ kept: string; verdict: ContentFilterVerdict }> {
  for (let start = 0; start < text.length; start += windowChars) {
    const verdict = await check(text.slice(Math.max(0, start - windowChars), start + windowChars));
    if (verdict.flagged) return { kept: text.slice(0, start), verdict };
  }
  return { kept: text, verdict: PASSED };
}

/**
 * The engine of one call, with its answers checked before they are handed on; with n > 1 each
 * choice is checked (and cut) on its own. Tool calls are passed as the model made them: only text
 * is moderated.
 */
function filteredEngine(inner: Engine, check: Check, safety: SafetyConfig): Engine {
  const windowChars = safety.window_chars;
  /** Usage counted from what each choice holds (a choice cut, an answer cut at max_tokens): the prompt, and the text's tokens. */
  const deliveredUsage = async (promptTokens: number, delivered: string[]): Promise<Usage> => {
    let completionTokens = 0;
    for (const text of delivered) if (text) completionTokens += await inner.countTokens(text);
    return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
  };
  return {
    embed: (input, signal) => inner.embed(input, signal),
    rerank: (query, documents, signal) => inner.rerank(query, documents, signal),
    moderate: (inputs, signal) => inner.moderate(inputs, signal),
    countChatTokens: (messages, tools) => inner.countChatTokens(messages, tools),
    countTokens: (text) => inner.countTokens(text),
    unsupported: inner.unsupported ? (req) => inner.unsupported!(req) : undefined,

    async chat(req, signal): Promise<EngineChatResult> {
      const result = await inner.chat(req, signal);
      const choices: EngineChoice[] = [];
      // The tokens withheld from the choices that were cut, and those they kept.
      let withheld = 0;
      let keptTokens = 0;
      // An upstream that ignored max_tokens: only what the client can get (the first max_tokens of
      // each choice, as InferenceService cuts it) is checked, not a moderation call per window of
      // all the rest, and the answer's count is that of what is left (the upstream's covers text
      // nobody gets).
      const overran = result.usage.completionTokens > req.maxTokens * (req.n ?? 1);
      const made = (result.choices ?? [result]).map((c) => (overran ? withinMaxTokens(c, req.maxTokens) : c));
      let usage = overran
        ? await deliveredUsage(
            result.usage.promptTokens,
            made.map((c) => (c.reasoning ?? '') + (c.refusal ?? '') + outputText(c)),
          )
        : result.usage;
      for (const choice of made) {
        // A refusal is output the client reads, as content is (streamed, it comes as content's deltas do).
        const refusal = choice.refusal ?? '';
        const { kept, verdict } = await checkWindows(refusal + choice.content, windowChars, check);
        const reasoning = choice.reasoning ? { reasoning: choice.reasoning, reasoningWithheld: true } : {};
        if (!verdict.flagged) {
          choices.push({ ...choice, ...reasoning, contentFilter: verdict });
          continue;
        }
        // Cut before the window that flagged; its tool calls (if any) are not sent either. Its
        // reasoning stays billed (outputText leaves it out of what is taken off).
        const keeps = kept ? await inner.countTokens(kept) : 0;
        withheld += (await inner.countTokens(refusal + outputText(choice))) - keeps;
        keptTokens += keeps;
        // What was kept is a start of the refusal and the content, in that order.
        const keptRefusal = kept.slice(0, refusal.length);
        choices.push({
          content: kept.slice(refusal.length),
          ...(keptRefusal ? { refusal: keptRefusal } : {}),
          ...reasoning,
          finishReason: 'content_filter',
          logprobs: logprobsWithin(choice.logprobs, Math.max(0, kept.length - refusal.length)),
          contentFilter: verdict,
        });
      }
      if (choices.some((c) => c.contentFilter?.flagged)) {
        // The engine's count, less what was withheld (the other choices keep their own figures);
        // never more than the engine's count of the whole answer (tollgate's tokenizer may count
        // the kept text higher than the model's did all of it).
        const completionTokens = Math.min(usage.completionTokens, Math.max(keptTokens, usage.completionTokens - withheld));
        usage = { promptTokens: usage.promptTokens, completionTokens, totalTokens: usage.promptTokens + completionTokens };
      }
      return { ...choices[0]!, usage, ...(result.choices ? { choices } : {}) };
    },

    async *chatStream(req, signal): AsyncGenerator<EngineStreamEvent> {
      const n = req.n ?? 1;
      const events = inner.chatStream(req, signal)[Symbol.asyncIterator]();
      // Per choice: deltas waiting for their window's check, the last window sent (the next one's
      // context), what was sent, the reasoning withheld, and whether the choice has ended.
      const choices = Array.from({ length: n }, () => ({
        pending: [] as EngineStreamEvent[],
        chars: 0,
        previous: '',
        sent: '',
        reasoning: '',
        ended: false,
      }));
      /** Checks choice `c`'s pending text: passed, it is sent; flagged, the choice ends with content_filter. */
      const release = async function* (c: number): AsyncGenerator<EngineStreamEvent, boolean> {
        const st = choices[c]!;
        const text = st.pending.map((e) => (e.type === 'delta' ? e.content : '')).join('');
        const verdict = text ? await check(st.previous.slice(-windowChars) + text) : PASSED;
        const pending = st.pending;
        st.pending = [];
        st.chars = 0;
        if (verdict.flagged) {
          st.ended = true;
          yield { type: 'choice_finish', choice: c, finishReason: 'content_filter', contentFilter: verdict };
          return false;
        }
        yield* pending;
        st.sent += text;
        if (text) st.previous = text;
        return true;
      };
      const allEnded = () => choices.every((st) => st.ended);
      // The prompt as the model's usage counts it when it came (InferenceService clamps it as any
      // engine's, the same as a plain answer cut here), else as counted at admission.
      const cutUsage = async (reportedPrompt = 0) =>
        deliveredUsage(
          reportedPrompt >= 1 ? reportedPrompt : await inner.countChatTokens(req.messages, req.tools),
          choices.map((st) => st.reasoning + st.sent),
        );
      let cut = false;
      // Choices the model itself has ended: when it has ended them all, its usage (counted for the
      // whole answer) comes next and costs nothing more to wait for.
      const modelEnded = new Set<number>();
      const settled = () => cut && modelEnded.size === n;
      try {
        for (;;) {
          let next: IteratorResult<EngineStreamEvent>;
          try {
            next = await events.next();
          } catch (e) {
            // Past the model's last choice nothing is lost: the answer ends as it was cut.
            if (settled()) break;
            throw e;
          }
          if (next.done) break;
          const event = next.value;
          if (event.type === 'started' || event.type === 'finish') {
            if (event.type === 'started') {
              yield event;
              continue;
            }
            // The model finished: every choice still open has its last text checked, then ends.
            for (const [c, st] of choices.entries()) {
              if (st.ended) continue;
              if (!(yield* release(c))) {
                cut = true;
                continue;
              }
              st.ended = true;
              yield { type: 'choice_finish', choice: c, finishReason: event.finishReason, contentFilter: PASSED };
            }
            yield cut
              ? {
                  ...event,
                  finishReason: 'content_filter',
                  usage: completionAtMost(await cutUsage(event.usage.promptTokens), event.usage.completionTokens),
                }
              : event;
            return;
          }
          const c = event.choice ?? 0;
          const st = choices[c];
          if (!st) {
            yield event; // not a choice of this call: InferenceService drops it
            continue;
          }
          if (event.type === 'choice_finish') modelEnded.add(c);
          if (st.ended) continue;
          if (event.type === 'reasoning_delta') {
            // Withheld, not checked: InferenceService counts it and relays none of it.
            st.reasoning += event.content;
            yield { ...event, withheld: true };
            continue;
          }
          if (event.type === 'delta') {
            st.pending.push(event);
            st.chars += event.content.length;
            if (st.chars < windowChars || (yield* release(c))) continue;
          } else {
            // A tool-call piece or the choice's end: its text so far is checked first.
            if (!(yield* release(c))) {
              cut = true;
            } else if (event.type === 'tool_call') {
              st.sent += (event.name ?? '') + event.arguments;
              yield event;
              continue;
            } else {
              st.ended = true;
              yield { ...event, contentFilter: PASSED };
              continue;
            }
          }
          cut = true;
          if (allEnded() && modelEnded.size < n) {
            // Every choice has ended and one was cut: stop the model here.
            yield { type: 'finish', finishReason: 'content_filter', usage: await cutUsage() };
            return;
          }
        }
        // The model ended every choice but its stream closed without its usage.
        if (settled()) yield { type: 'finish', finishReason: 'content_filter', usage: await cutUsage() };
      } finally {
        // Stops the model when the choices were cut (or the consumer went away).
        await events.return?.();
      }
    },
  };
}
