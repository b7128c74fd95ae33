// Origins of the tollgate servers a test process started (the harness's, and the processes it
// spawned): their /v1 answers are checked against the OpenAPI document (./openapi-contract.ts).
// Its own module, free of Vitest, so the harness also runs outside a test (benchmarks, scripts).
export const tollgateOrigins = new Set<string>();
