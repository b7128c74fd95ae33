// Writes the printed SDL to schema/schema.graphql (npm run schema:print); a test fails when it drifts.
import { writeFileSync } from 'node:fs';
import { printSchema } from 'graphql';
import { schema } from './schema.js';

export const printedSchema = () => `${printSchema(schema)}\n`;

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(new URL('../../schema/schema.graphql', import.meta.url), printedSchema());
  console.log('wrote schema/schema.graphql');
}
