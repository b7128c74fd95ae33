// The chat types beyond plain text: tools and tool calls, response formats, log-probabilities,
// and the JSON scalar that carries a tool's parameters and a response format's schema.
import { Kind, type ValueNode } from 'graphql';
import { DomainError } from '../../domain/errors.js';
import type { TokenLogprob, ToolCall } from '../../domain/inference/engine.js';
import type { ChatInput, ToolCallDelta } from '../../domain/inference/inference-service.js';
import { builder } from '../builder.js';
import { invalidScalarValue } from '../errors.js';

function literal(node: ValueNode, variables: Record<string, unknown> | null | undefined): unknown {
  switch (node.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return node.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(node.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map((v) => literal(v, variables));
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((f) => [f.name.value, literal(f.value, variables)]));
    case Kind.VARIABLE:
      return variables?.[node.name.value];
    default:
      throw invalidScalarValue('JSON cannot represent this value.');
  }
}

export const JsonScalar = builder.scalarType('JSON', {
  description: 'Any JSON value: a JSON Schema (a tool’s parameters, a response format’s schema).',
  serialize: (v) => v,
  parseValue: (v) => v,
  parseLiteral: (node, variables) => literal(node, variables),
});

// ---- inputs ----

const ToolCallFunctionInput = builder.inputType('ToolCallFunctionInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    arguments: t.string({ required: true, description: 'The arguments, as the JSON text the model wrote.' }),
  }),
});

export const ToolCallInput = builder.inputType('ToolCallInput', {
  description: 'A tool call an assistant message made (to send the conversation back with the tool results).',
  fields: (t) => ({
    id: t.string({ required: true }),
    type: t.string({ required: false, description: "'function' (the default)." }),
    function: t.field({ type: ToolCallFunctionInput, required: true }),
  }),
});

const FunctionDefinitionInput = builder.inputType('FunctionDefinitionInput', {
  fields: (t) => ({
    name: t.string({ required: true, description: '1 to 64 letters, digits, underscores or dashes.' }),
    description: t.string({ required: false }),
    parameters: t.field({ type: JsonScalar, required: false, description: 'A JSON Schema of the arguments (an object).' }),
    strict: t.boolean({ required: false }),
  }),
});

export const ToolInput = builder.inputType('ToolInput', {
  description: 'A tool the model may call.',
  fields: (t) => ({
    type: t.string({ required: true, description: "'function'." }),
    function: t.field({ type: FunctionDefinitionInput, required: true }),
  }),
});

export const ToolChoiceModeEnum = builder.enumType('ToolChoiceMode', { values: ['auto', 'none', 'required'] as const });

export const ToolChoiceInput = builder.inputType('ToolChoiceInput', {
  description: 'Whether the model calls tools: a mode, or the name of the function it must call (one of the two).',
  fields: (t) => ({
    mode: t.field({ type: ToolChoiceModeEnum, required: false }),
    functionName: t.string({ required: false }),
  }),
});

const JsonSchemaFormatInput = builder.inputType('JsonSchemaFormatInput', {
  fields: (t) => ({
    name: t.string({ required: true, description: '1 to 64 letters, digits, underscores or dashes.' }),
    description: t.string({ required: false }),
    schema: t.field({ type: JsonScalar, required: false, description: 'The JSON Schema the answer must validate against.' }),
    strict: t.boolean({ required: false }),
  }),
});

export const ResponseFormatInput = builder.inputType('ResponseFormatInput', {
  description: "The answer's format: text (the default), json_object, or json_schema with `jsonSchema`.",
  fields: (t) => ({
    type: t.string({ required: true }),
    jsonSchema: t.field({ type: JsonSchemaFormatInput, required: false }),
  }),
});

/** The GraphQL tool choice as the domain reads it. */
export function toolChoiceOf(input: { mode?: string | null; functionName?: string | null } | null | undefined): ChatInput['toolChoice'] {
  if (!input) return null;
  if (input.mode && input.functionName) {
    throw new DomainError('invalid_value', "'toolChoice' takes either 'mode' or 'functionName', not both.", { param: 'tool_choice' });
  }
  if (input.functionName) return { type: 'function', function: { name: input.functionName } };
  return input.mode ?? null;
}

// ---- outputs ----

const ToolCallFunctionRef = builder.objectRef<ToolCall['function']>('ToolCallFunction').implement({
  fields: (t) => ({
    name: t.exposeString('name'),
    arguments: t.exposeString('arguments', { description: 'The arguments as JSON text.' }),
  }),
});

export const ToolCallRef = builder.objectRef<ToolCall>('ToolCall').implement({
  fields: (t) => ({
    id: t.exposeString('id'),
    type: t.exposeString('type'),
    function: t.expose('function', { type: ToolCallFunctionRef }),
  }),
});

const ToolCallDeltaFunctionRef = builder.objectRef<ToolCallDelta['function']>('ToolCallDeltaFunction').implement({
  fields: (t) => ({
    name: t.exposeString('name', { nullable: true }),
    arguments: t.exposeString('arguments', { description: 'The next piece of the arguments’ JSON text.' }),
  }),
});

export const ToolCallDeltaRef = builder.objectRef<ToolCallDelta>('ToolCallDelta').implement({
  description: 'A piece of a streamed tool call: its id, type and name come with its first piece.',
  fields: (t) => ({
    index: t.exposeInt('index'),
    id: t.exposeString('id', { nullable: true }),
    type: t.exposeString('type', { nullable: true }),
    function: t.expose('function', { type: ToolCallDeltaFunctionRef }),
  }),
});

type TopLogprob = TokenLogprob['topLogprobs'][number];

const TopLogprobRef = builder.objectRef<TopLogprob>('TopLogprob').implement({
  fields: (t) => ({
    token: t.exposeString('token'),
    logprob: t.exposeFloat('logprob'),
    bytes: t.exposeIntList('bytes', { nullable: true }),
  }),
});

export const TokenLogprobRef = builder.objectRef<TokenLogprob>('TokenLogprob').implement({
  description: "One output token's log-probability, with the most likely alternatives (as many as topLogprobs asked for).",
  fields: (t) => ({
    token: t.exposeString('token'),
    logprob: t.exposeFloat('logprob'),
    bytes: t.exposeIntList('bytes', { nullable: true }),
    topLogprobs: t.expose('topLogprobs', { type: [TopLogprobRef] }),
  }),
});
