// Validates our /v1 responses against the OpenAI API's own response schemas, vendored in
// test/oracles/openai-schemas.json (its README says where they come from and how to refresh them).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';

const file = path.resolve(import.meta.dirname, '../oracles/openai-schemas.json');
const doc = JSON.parse(readFileSync(file, 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(doc, 'openai');

export type OracleSchema =
  | 'CreateChatCompletionResponse'
  | 'CreateChatCompletionStreamResponse'
  | 'CreateEmbeddingResponse'
  | 'CreateModerationResponse'
  | 'ListModelsResponse'
  | 'Model'
  | 'ErrorResponse';

/** Returns the schema violations of `value` (an empty list when it conforms). */
export function violations(schema: OracleSchema, value: unknown): string[] {
  const validate = ajv.getSchema(`openai#/components/schemas/${schema}`);
  if (!validate) throw new Error(`no schema ${schema}`);
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}
