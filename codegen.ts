// GraphQL Code Generator: typed documents for compat/ and the tests, from the committed SDL
// (schema/schema.graphql, printed from the Pothos schema by `npm run schema:print`) and the
// operations in schema/operations/; and, from the same schema, the dashboard's documents (the
// graphql() calls in src/dashboard, colocated with the page that runs them) into
// src/dashboard/gql/. `npm run codegen` runs both steps.
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  ignoreNoDocuments: false,
  generates: {
    'src/generated/': {
      documents: ['schema/operations/*.graphql'],
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        emitLegacyCommonJSImports: false,
        useTypeImports: true,
        enumsAsTypes: true,
        scalars: { DateTime: 'string', Decimal: 'string', SafeInt: 'number', EmbeddingVector: 'number[]', JSON: 'unknown' },
      },
    },
    'src/dashboard/gql/': {
      documents: ['src/dashboard/**/*.{ts,tsx}', '!src/dashboard/gql/**'],
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        useTypeImports: true,
        enumsAsTypes: true,
        scalars: { DateTime: 'string', Decimal: 'string', SafeInt: 'number', EmbeddingVector: 'number[]', JSON: 'unknown' },
      },
    },
  },
};

export default config;
