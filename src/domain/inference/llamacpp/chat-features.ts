// The llama.cpp chat features beyond plain text:
//   - the prompt: the GGUF's chat template, with the request's tools documented the way its
//     node-llama-cpp chat wrapper documents functions, and earlier tool calls and their results
//     rendered in the template's function-call syntax;
//   - JSON output: a grammar built from the response format's schema (node-llama-cpp's
//     createGrammarForJsonSchema; `json_object`: its JSON grammar), cached per schema;
//   - log-probabilities of each token from the sampler's probabilities (after temperature, top_p);
//   - tool calls in the wrapper's syntax (ChatML: `||call: name(params)`): with tool_choice
//     `required` or a named function the call is forced: its prefix is put in the model's mouth, the
//     name chosen under a grammar of the tools' names, the arguments generated under a grammar built
//     from the tool's parameters (so they parse and match the schema); with `auto` the model writes
//     freely, and a response that opens with the call prefix becomes a call the same way. One call
//     per answer.
import {
  type ChatHistoryItem,
  type ChatModelFunctions,
  type ChatModelResponse,
  type Llama,
  type LlamaContextSequence,
  type LlamaGrammar,
  LlamaGrammarEvaluationState,
  LlamaText,
  type Token,
} from 'node-llama-cpp';
import { DomainError } from '../../errors.js';
import type { ChatMessage, EngineChatRequest, TokenLogprob, ToolDefinition } from '../engine.js';
import { type ChatRunner, prefill } from './runners.js';
import { grammarSchema, patchGrammar } from './json-schema-grammar.js';

/** Grammars built from schemas, per runtime: building one parses the schema and compiles GBNF. */
const grammarCache = new Map<string, Promise<LlamaGrammar>>();
const GRAMMAR_CACHE_MAX = 64;

function cached(key: string, make: () => Promise<LlamaGrammar>): Promise<LlamaGrammar> {
  let g = grammarCache.get(key);
  if (!g) {
    if (grammarCache.size >= GRAMMAR_CACHE_MAX) grammarCache.delete(grammarCache.keys().next().value!);
    g = make();
    grammarCache.set(key, g);
    g.catch(() => grammarCache.delete(key));
  }
  return g;
}

/**
 * The grammar of a JSON Schema (./json-schema-grammar.ts translates it, refusing what no grammar
 * holds), cached with its translation; a schema it cannot build is refused naming `param`.
 */
export async function schemaGrammar(llama: Llama, schema: Record<string, unknown> | undefined, param: string, modelId: string) {
  const key = `schema:${param}:${JSON.stringify(schema ?? {})}`;
  try {
    return await cached(key, async () => {
      const { schema: translated, rules } = grammarSchema(schema, param);
      const json = await llama.createGrammarForJsonSchema(translated as Parameters<Llama['createGrammarForJsonSchema']>[0]);
      return llama.createGrammar({
        grammar: patchGrammar(json.grammar, rules),
        stopGenerationTriggers: json.stopGenerationTriggers,
        trimWhitespaceSuffix: json.trimWhitespaceSuffix,
      });
    });
  } catch (e) {
    if (e instanceof DomainError) throw e;
    throw new DomainError(
      'unsupported_parameter',
      `'${param}' is not supported by the model '${modelId}': its grammar cannot be built from this schema (${(e as Error).message.slice(0, 200)}).`,
      { param },
    );
  }
}

/**
 * Builds (or finds cached) the grammar of every tool's parameters before anything is generated:
 * a call may open in any answer, and a schema no grammar holds is refused now, not mid-call.
 */
export async function checkToolSchemas(llama: Llama, req: EngineChatRequest, modelId: string): Promise<void> {
  if (!usesTools(req)) return;
  for (const [i, tool] of req.tools!.entries())
    await schemaGrammar(llama, tool.function.parameters, `tools[${i}].function.parameters`, modelId);
}

/** The grammar the response format asks for, if any. */
export async function formatGrammar(llama: Llama, req: EngineChatRequest, modelId: string): Promise<LlamaGrammar | undefined> {
  const format = req.responseFormat;
  if (!format) return undefined;
  if (format.type === 'json_object') return cached('json', () => llama.getGrammarFor('json'));
  if (format.type !== 'json_schema') return undefined;
  return schemaGrammar(llama, format.jsonSchema.schema, 'response_format.json_schema.schema', modelId);
}

/** A grammar's stop triggers that are plain text (the JSON grammars end the value with "\n\n\n\n"). */
export function grammarStops(grammar: LlamaGrammar | undefined): string[] {
  if (!grammar) return [];
  const out: string[] = [];
  for (const t of grammar.stopGenerationTriggers) {
    const text = typeof t === 'string' ? t : Array.isArray(t) ? (t.every((v) => typeof v === 'string') ? t.join('') : '') : String(t);
    if (text) out.push(text);
  }
  return out;
}

export function grammarState(runner: ChatRunner, grammar: LlamaGrammar | undefined) {
  return grammar ? new LlamaGrammarEvaluationState({ model: runner.model, grammar }) : undefined;
}

/** Whether the request makes the model call tools (tools given and tool_choice is not 'none'). */
export const usesTools = (req: EngineChatRequest) => !!req.tools?.length && req.toolChoice !== 'none';

function functionsOf(tools: ToolDefinition[]): ChatModelFunctions {
  const out: Record<string, { description?: string; params?: never }> = {};
  for (const t of tools) {
    out[t.function.name] = {
      ...(t.function.description ? { description: t.function.description } : {}),
      ...(t.function.parameters ? { params: t.function.parameters as never } : {}),
    };
  }
  return out;
}

const parseArgs = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/** The conversation in node-llama-cpp's history form; tool results join the calls they answer. */
export function chatHistory(messages: ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  const results = new Map<string, string>();
  for (const m of messages) if (m.role === 'tool' && m.toolCallId !== undefined) results.set(m.toolCallId, m.content);
  const answered = new Set<string>();
  for (const m of messages) {
    if (m.role === 'system') history.push({ type: 'system', text: m.content });
    else if (m.role === 'user') history.push({ type: 'user', text: m.content });
    else if (m.role === 'assistant') {
      const response: ChatModelResponse['response'] = m.content ? [m.content] : [];
      for (const c of m.toolCalls ?? []) {
        answered.add(c.id);
        response.push({
          type: 'functionCall',
          name: c.function.name,
          params: parseArgs(c.function.arguments),
          result: results.get(c.id) ?? '',
        });
      }
      history.push({ type: 'model', response });
    } else if (!answered.has(m.toolCallId ?? '')) {
      // A tool result for no call in the history: the model reads it as the user's message.
      history.push({ type: 'user', text: m.content });
    }
  }
  history.push({ type: 'model', response: [] });
  return history;
}

/** The prompt's tokens: the template, with the tools documented when the model may call them. */
export function promptTokens(runner: ChatRunner, messages: ChatMessage[], tools: ToolDefinition[] | undefined): Token[] {
  const state = runner.wrapper.generateContextState({
    chatHistory: chatHistory(messages),
    ...(tools?.length ? { availableFunctions: functionsOf(tools), documentFunctionParams: true } : {}),
  });
  return state.contextText.tokenize(runner.model.tokenizer);
}

/**
 * The wrapper's function-call syntax: the text that opens a call (as detokenized with its special
 * tokens, leading whitespace trimmed) and its tokens (special tokens kept: Qwen's `<tool_call>` is
 * one), and the tokens before the params.
 */
export function callSyntax(runner: ChatRunner): { prefix: string; prefixTokens: Token[]; paramsPrefix: Token[] } {
  const call = runner.wrapper.settings.functions.call;
  const prefix = LlamaText(call.prefix);
  return {
    prefix: prefix.toString().trimStart(),
    prefixTokens: prefix.tokenize(runner.model.tokenizer, 'trimLeadingSpace'),
    paramsPrefix: LlamaText(call.paramsPrefix).tokenize(runner.model.tokenizer, 'trimLeadingSpace'),
  };
}

/** A GBNF grammar whose only sentences are the given names (the rest of each, after `typed`). */
export async function namesGrammar(llama: Llama, names: string[]): Promise<LlamaGrammar> {
  const alternatives = names.map((n) => JSON.stringify(n)).join(' | ');
  return cached(`names:${alternatives}`, () => llama.createGrammar({ grammar: `root ::= ${alternatives}` }));
}

/** Log-probability of a probability, as OpenAI reports it (-9999 for what had none). */
const logOf = (p: number | undefined) => (p !== undefined && p > 0 ? Math.max(-9999, Math.log(p)) : -9999);

export function tokenLogprob(runner: ChatRunner, token: Token, probabilities: Map<Token, number> | undefined, top: number): TokenLogprob {
  const text = (t: Token) => runner.model.detokenize([t], false);
  const entry = (t: Token, p: number | undefined) => {
    const s = text(t);
    // A byte token that is part of a character has no text of its own: no bytes are claimed for it.
    return { token: s, logprob: logOf(p), bytes: s.includes('\uFFFD') ? null : [...Buffer.from(s, 'utf8')] };
  };
  const topLogprobs: TokenLogprob['topLogprobs'] = [];
  if (probabilities && top > 0) {
    for (const [t, p] of probabilities) {
      topLogprobs.push(entry(t, p));
      if (topLogprobs.length >= top) break;
    }
  }
  return { ...entry(token, probabilities?.get(token)), topLogprobs };
}

/**
 * Evaluates from `want` (every token that should precede the next sampled one), reusing what the
 * sequence already holds of it, and yields the sampled tokens (with probabilities when asked). The
 * new tokens are read a batch at a time, `signal` checked between batches (./runners.ts prefill).
 */
export async function* continueFrom(
  seq: LlamaContextSequence,
  want: Token[],
  options: Parameters<LlamaContextSequence['evaluate']>[1],
  probabilities: boolean,
  signal: AbortSignal,
): AsyncGenerator<{ token: Token; probabilities?: Map<Token, number> }> {
  const have = seq.contextTokens;
  let common = 0;
  while (common < have.length && common < want.length - 1 && have[common] === want[common]) common++;
  if (common < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: common, end: seq.nextTokenIndex }]);
  const input = await prefill(seq, want.slice(common), signal);
  if (probabilities) yield* seq.evaluateWithMetadata(input, { probabilities: true }, options);
  else for await (const token of seq.evaluate(input, options)) yield { token };
}
