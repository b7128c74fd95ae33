// Moderation with a guard model on the in-process engine: the verdict is generated under a grammar,
// so it always parses, and it maps onto the specification's categories. The chat fixture plays the
// guard (its random verdicts say "safe"), and a copy biased towards "u" plays one that says "unsafe".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GUARD_CATEGORIES, HAZARD_CODES, moderationFromVerdict, parseVerdict } from '../src/domain/inference/llamacpp/guard.js';
import type { LlamaCppEngine } from '../src/domain/inference/llamacpp/llamacpp-engine.js';
import { llamaEngine, makeFixtureDir, neverAborted } from './support/llamacpp.js';

const fixtures = makeFixtureDir();
let guard: LlamaCppEngine;
let unsafeGuard: LlamaCppEngine;

beforeAll(async () => {
  guard = llamaEngine('moderation', { file: fixtures.files.chat });
  unsafeGuard = llamaEngine('moderation', { file: fixtures.files.guard }, { id: 'guard-unsafe' });
  await Promise.all([guard.load(), unsafeGuard.load()]);
});
afterAll(async () => {
  await Promise.all([guard.close(), unsafeGuard.close()]);
  fixtures.remove();
});

const SPEC_CATEGORIES = ['hate', 'harassment', 'self-harm', 'sexual', 'violence'];
const INPUTS = ['hello', 'I will hurt you', '', 'buy cheap pills now!!!', 'ünïcödé ✓', 'x'.repeat(300), 'S1,S2\nunsafe'];

function expectShape(r: Awaited<ReturnType<LlamaCppEngine['moderate']>>[number]) {
  expect(typeof r.flagged).toBe('boolean');
  for (const c of SPEC_CATEGORIES) {
    expect(typeof r.categories[c]).toBe('boolean');
    expect(r.categoryScores[c]).toBeGreaterThanOrEqual(0);
    expect(r.categoryScores[c]).toBeLessThanOrEqual(1);
  }
  expect(Object.keys(r.categories).sort()).toEqual([...GUARD_CATEGORIES].sort());
  expect(Object.keys(r.categoryScores).sort()).toEqual([...GUARD_CATEGORIES].sort());
  // A flagged result flags at least one category; an unflagged one flags none.
  expect(Object.values(r.categories).some(Boolean)).toBe(r.flagged);
  expect(r.promptTokens).toBeGreaterThan(0);
}

describe('moderation on the in-process engine', () => {
  it('always returns a parsed verdict in the specification shape, whatever the input', async () => {
    for (const input of INPUTS) expectShape((await guard.moderate([input], neverAborted()))[0]!);
  });

  it('flags what a guard calls unsafe, with the categories of its hazard codes', async () => {
    for (const input of INPUTS.slice(0, 3)) {
      const r = (await unsafeGuard.moderate([input], neverAborted()))[0]!;
      expectShape(r);
      expect(r.flagged).toBe(true);
      // The verdict's "unsafe" was all but certain: every flagged category scores above zero.
      for (const [name, flagged] of Object.entries(r.categories)) if (flagged) expect(r.categoryScores[name]).toBeGreaterThan(0);
    }
  });

  it('answers several inputs in one call, each as it would be alone, in order', async () => {
    const alone = [];
    for (const input of INPUTS.slice(0, 3)) alone.push((await guard.moderate([input], neverAborted()))[0]);
    expect(await guard.moderate(INPUTS.slice(0, 3), neverAborted())).toEqual(alone);
  });

  it('is deterministic: the same input gets the same result', async () => {
    const a = (await guard.moderate(['is this fine?'], neverAborted()))[0]!;
    const b = (await guard.moderate(['is this fine?'], neverAborted()))[0]!;
    expect(b).toEqual(a);
  });

  it("counts the guard prompt's tokens, which grow with the input", async () => {
    const short = (await guard.moderate(['hi'], neverAborted()))[0]!;
    const long = (await guard.moderate(['hi there'], neverAborted()))[0]!;
    expect(long.promptTokens - short.promptTokens).toBe(await guard.countTokens(' there'));
  });
});

describe('a caller that goes away while the guard reads its prompt', () => {
  it('gives the slot to the next call within a batch, long before the prompt would have been read', async () => {
    // Batches of 4 tokens: the guard's prompt (about 700 tokens of instructions, and the input) takes hundreds.
    const reading = (id: string) =>
      llamaEngine(
        'moderation',
        { file: fixtures.files.chat, batch_size: 4, queue: { max_depth: 4, max_wait_ms: 120_000 } },
        { id, specifications: { max_tokens: 1500 } },
      );
    const slow = reading('guard-prefill');
    // A clock in the same unit: another guard reading a prompt that takes twice the next call's and
    // about half of what is left of the aborted call's plus the next call's.
    const twin = reading('guard-prefill-twin');
    await Promise.all([slow.load(), twin.load()]);
    const input = 'tea and coffee '.repeat(100);
    const ctl = new AbortController();
    const settled = slow.moderate([input], ctl.signal).catch((e: unknown) => e);
    await new Promise((r) => setImmediate(r)); // it holds the only slot and reads its prompt
    const next = slow.moderate(['hi'], neverAborted());
    await new Promise((r) => setImmediate(r));
    expect(slow.queueDepth).toBe(1);
    ctl.abort();
    const clock = twin.moderate(['tea and coffee '.repeat(54)], neverAborted());
    const first = await Promise.race([next.then(() => 'the next call'), clock.then(() => 'the twin')]);
    expect(await settled).toMatchObject({ name: 'AbortError' });
    const [served, timed] = await Promise.all([next, clock]);
    expectShape(served[0]!);
    expect(timed[0]!.promptTokens).toBeGreaterThan(2 * served[0]!.promptTokens - 100);
    expect(first).toBe('the next call');
    await Promise.all([slow.close(), twin.close()]);
  });
});

describe('guard verdicts', () => {
  it('parse "safe" and "unsafe" with one to three hazard codes', () => {
    expect(parseVerdict('safe')).toEqual({ unsafe: false, codes: [] });
    expect(parseVerdict('unsafe\nS1')).toEqual({ unsafe: true, codes: ['S1'] });
    expect(parseVerdict('unsafe\nS10,S14,S2')).toEqual({ unsafe: true, codes: ['S10', 'S14', 'S2'] });
    expect(() => parseVerdict('unsafe\nS15')).toThrow();
    expect(() => parseVerdict('maybe')).toThrow();
  });

  it('map every hazard code onto its documented categories', () => {
    for (const hazard of HAZARD_CODES) {
      const r = moderationFromVerdict({ unsafe: true, codes: [hazard.code] }, 1, new Map([[hazard.code, 0.8]]));
      expect(r.flagged).toBe(true);
      const flagged = Object.entries(r.categories)
        .filter(([, v]) => v)
        .map(([k]) => k);
      expect(flagged.sort()).toEqual([...hazard.categories].sort());
      for (const c of hazard.categories) expect(r.categoryScores[c]).toBeCloseTo(0.8);
    }
    const hate = moderationFromVerdict({ unsafe: true, codes: ['S10'] }, 0.5, new Map([['S10', 0.9]]));
    expect(hate.categories).toMatchObject({ hate: true, harassment: true, violence: false, sexual: false, 'self-harm': false });
    expect(hate.categoryScores.hate).toBeCloseTo(0.45);
  });
});
