// Moderation with a guard model (Llama Guard style) on llama.cpp: the verdict generated under a
// grammar (./guard.ts), shaped into OpenAI's moderation result with probabilities.
import {
  type ChatHistoryItem,
  type ChatWrapper,
  LlamaGrammarEvaluationState,
  type LlamaModel,
  LlamaText,
  SpecialToken,
  SpecialTokensText,
  type Token,
} from 'node-llama-cpp';
import { DomainError } from '../../errors.js';
import type { EngineModerationResult } from '../engine.js';
import { guardPrompt, HAZARD_CODES, moderationFromVerdict, parseVerdict, UNSAFE_PREFIX } from './guard.js';
import { abortReason, type ChatRunner, prefill, VERDICT_MAX_TOKENS } from './runners.js';

/**
 * A guard model's verdict on `input`: generated greedily under the verdict grammar, with the
 * probability of "unsafe" from the first token and each hazard code's from a forced "unsafe\nS".
 */
export async function moderateOn(
  runner: ChatRunner,
  modelId: string,
  input: string,
  signal: AbortSignal,
  stats: { generatedTokens: number },
): Promise<EngineModerationResult> {
  const guard = runner.guard;
  if (!guard) throw new DomainError('invalid_model', `The model '${modelId}' is not a moderation model.`, { param: 'model' });
  const { model } = runner;
  const prompt = guardPromptTokens(model, runner.wrapper, guard.llama3Headers, input);
  if (prompt.length + VERDICT_MAX_TOKENS > runner.contextSize) {
    throw new DomainError(
      'input_too_long',
      `The input with the guard's prompt takes ${prompt.length} tokens; the model '${modelId}' is served with ${runner.contextSize}.`,
      {
        param: 'input',
      },
    );
  }
  const lease = await runner.pool.acquire(signal);
  try {
    const seq = lease.slot;
    await seq.eraseContextTokenRanges([{ start: 0, end: seq.nextTokenIndex }]);
    const greedy = { temperature: 0, topK: 0, topP: 1, minP: 0, yieldEogToken: true } as const;

    // 1. The verdict, greedy under the grammar; the first token's probabilities say how likely "unsafe" was.
    const verdictTokens: Token[] = [];
    let first: Map<Token, number> | undefined;
    const state = new LlamaGrammarEvaluationState({ model, grammar: guard.verdict });
    const tail = await prefill(seq, prompt, signal);
    for await (const out of seq.evaluateWithMetadata(tail, { probabilities: true }, { ...greedy, grammarEvaluationState: state })) {
      if (signal.aborted) throw abortReason(signal);
      first ??= out.probabilities;
      if (model.isEogToken(out.token) || runner.stopTokens.has(out.token)) break;
      verdictTokens.push(out.token);
      stats.generatedTokens++;
      if (verdictTokens.length >= VERDICT_MAX_TOKENS) break;
    }
    const verdict = parseVerdict(model.detokenize(verdictTokens, false));
    let safeMass = 0;
    let unsafeMass = 0;
    for (const [token, p] of first ?? []) {
      const text = model.detokenize([token], false);
      if (!text) continue;
      if (UNSAFE_PREFIX.startsWith(text) || text.startsWith('unsafe')) unsafeMass += p;
      else if ('safe'.startsWith(text) || text.startsWith('safe')) safeMass += p;
    }
    const unsafeProbability = unsafeMass + safeMass > 0 ? unsafeMass / (unsafeMass + safeMass) : verdict.unsafe ? 1 : 0;

    // 2. The codes' probabilities: after a forced "unsafe\nS", how likely each code's first token is.
    if (signal.aborted) throw abortReason(signal);
    await seq.eraseContextTokenRanges([{ start: prompt.length - 1, end: seq.nextTokenIndex }]);
    const forced = [prompt[prompt.length - 1]!, ...model.tokenize(UNSAFE_PREFIX, false, 'trimLeadingSpace')];
    const digits = new LlamaGrammarEvaluationState({ model, grammar: guard.digits });
    const codeProbabilities = new Map<string, number>();
    for await (const out of seq.evaluateWithMetadata(forced, { probabilities: true }, { ...greedy, grammarEvaluationState: digits })) {
      for (const [token, p] of out.probabilities) {
        const text = model.detokenize([token], false);
        if (!text) continue;
        for (const h of HAZARD_CODES) {
          if (h.code.slice(1).startsWith(text)) codeProbabilities.set(h.code, (codeProbabilities.get(h.code) ?? 0) + p);
        }
      }
      break;
    }
    const shaped = moderationFromVerdict(verdict, unsafeProbability, codeProbabilities);
    return { ...shaped, promptTokens: prompt.length };
  } finally {
    lease.release();
  }
}

/** The guard's prompt as tokens: Llama 3 headers when the vocabulary has them (Llama Guard 3), else the GGUF's chat template. */
export function guardPromptTokens(model: LlamaModel, wrapper: ChatWrapper, llama3Headers: boolean, input: string): Token[] {
  const prompt = guardPrompt(input);
  if (llama3Headers) {
    return LlamaText([
      new SpecialToken('BOS'),
      new SpecialTokensText('<|start_header_id|>user<|end_header_id|>\n\n'),
      prompt,
      new SpecialTokensText('<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n'),
    ]).tokenize(model.tokenizer);
  }
  const history: ChatHistoryItem[] = [
    { type: 'user', text: prompt },
    { type: 'model', response: [] },
  ];
  return wrapper.generateContextState({ chatHistory: history }).contextText.tokenize(model.tokenizer);
}
