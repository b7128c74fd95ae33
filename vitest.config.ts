import { defineConfig } from 'vitest/config';

export default defineConfig({
  // graphql 16 ships a CommonJS and an ES-module copy; pin one so schemas share a realm.
  resolve: { alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }] },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Every /v1 response of a harness server is checked against its OpenAPI document.
    setupFiles: ['test/support/openapi-contract.ts'],
    reporters: ['default'],
  },
});
