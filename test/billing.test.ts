// Usage billing through the running server, on SQLite and (with TEST_DATABASE_URL) PostgreSQL:
// each rule of the specification's section 1, each 402 code, each way a call ends, the ledger,
// the usage report and the account settings, with exact balances after every step.
//
// chat-test costs $1 per million prompt tokens and $2 per million completion tokens: 1,000 and
// 2,000 nanos a token. The fake upstream counts a prompt as 4 + words per message and produces
// `#tokens=N` completion tokens (capped by max_tokens); admission estimates the prompt with the
// o200k tokenizer (7 + tokens of the text for one user message), which is never less here.
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { formatDecimal, parseDecimal } from '../src/domain/billing/money.js';
import { countChatTokens, countTextTokens } from '../src/domain/inference/tokenizer.js';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { ADMIN_TOKEN, catalogYaml, clockFrom, startTestServer, type TestServer } from './support/harness.js';
import { client, credit, seed, signedIn } from './support/seed.js';
import { until } from './support/wait.js';

// Small allocations, so that tests reach their ends in a few calls (operators may override tiers).
const TIERS = `
tiers:
  free: { monthly_tokens: 100 }
  developer: { monthly_tokens: 50 }
  startup: { monthly_tokens: 0 }
`;

/** Billing's clock starts here (mid-month), so the period and the day the tests name are known. */
const NOW = '2031-05-14T12:00:00.000Z';

const IN = 1_000n;
const OUT = 2_000n;
/** Admission's estimate of a one-message prompt. */
const est = (content: string) => countChatTokens([{ role: 'user', content }]);
/** The fake upstream's count of a one-message prompt. */
const fakePrompt = (content: string) => 4 + content.trim().split(/\s+/).length;
const usd = (nanos: bigint) => formatDecimal(nanos);

describe.each(BACKENDS)('billing on %s', (backend) => {
  let db: TestDatabase;
  let s: TestServer;

  beforeAll(async () => {
    db = await createTestDatabase(backend);
    s = await startTestServer({ databaseUrl: db.url, yaml: (url) => catalogYaml(url, TIERS), now: clockFrom(NOW) });
  });
  afterAll(async () => {
    await s?.close();
    await db?.drop();
  });
  // Every test ends with the ledger's invariants holding and no hold left open.
  afterEach(async () => {
    expect(await s.services.billing.verifyLedger()).toEqual([]);
    expect(await s.services.billing.countOpenHolds()).toBe(0);
  });

  const events = (accountId: string) => s.services.billing.listUsageEvents(accountId);
  const transactions = async (accountId: string) => (await s.services.billing.listTransactions(accountId, { limit: 1000 })).transactions;

  describe('the rules of section 1', () => {
    it('uses the monthly allocation first, then charges the wallet; a call that outgrows the allocation is split to the nano', async () => {
      const a = await seed(s).account({ tier: 'developer' }).wallet('1.00');
      const c = client(s, a.apiKey);

      // 6 prompt + 5 completion tokens, all from the allocation of 50: no wallet transaction.
      const first = await c.chat('hello #tokens=5', { max_tokens: 5 });
      expect(first.status).toBe(200);
      expect(first.body.usage).toEqual({ prompt_tokens: 6, completion_tokens: 5, total_tokens: 11 });
      expect(await c.balance()).toBe('1');
      expect((await transactions(a.id)).map((t) => t.type)).toEqual(['bonus']);

      // 8 prompt + 40 completion tokens with 39 allocation tokens left: the allocation takes the
      // 8 prompt tokens and 31 completion tokens; the wallet pays 9 completion tokens = 18,000 nanos.
      const split = await c.chat('a b c #tokens=40', { max_tokens: 40 });
      expect(split.status).toBe(200);
      expect(split.body.usage).toEqual({ prompt_tokens: 8, completion_tokens: 40, total_tokens: 48 });
      expect(await c.balance()).toBe('0.999982');
      const usage = (await transactions(a.id)).at(-1)!;
      expect(usage).toMatchObject({ type: 'usage', amount: -18_000n, balanceAfter: 999_982_000n });
      expect((await events(a.id)).at(-1)).toMatchObject({
        outcome: 'completed',
        promptTokens: 8,
        completionTokens: 40,
        allocationTokens: 39,
        walletNanos: 18_000n,
      });

      // The allocation is used up: 6 prompt + 10 completion tokens at model prices = 26,000 nanos.
      const third = await c.chat('x #tokens=10', { max_tokens: 10 });
      expect(third.status).toBe(200);
      expect(await c.balance()).toBe('0.999956');
      expect((await events(a.id)).at(-1)).toMatchObject({ allocationTokens: 0, walletNanos: 26_000n });

      const allocation = (await c.graphql('{ viewer { allocation { monthlyTokens used held remaining period } } }')).body.data.viewer
        .allocation;
      expect(allocation).toMatchObject({ monthlyTokens: 50, used: 50, held: 0, remaining: 0 });
      expect(allocation.period).toBe('2031-05');
      // Each usage transaction explains its cents; the chain of balances holds.
      const list = await transactions(a.id);
      expect(list.map((t) => [t.type, usd(t.amount), usd(t.balanceAfter)])).toEqual([
        ['bonus', '1', '1'],
        ['usage', '-0.000018', '0.999982'],
        ['usage', '-0.000026', '0.999956'],
      ]);
      expect(list[1]!.description).toContain('chat-test: 8 prompt + 40 completion tokens (39 from the monthly allocation)');
    });

    it('refuses a free-tier call the allocation cannot cover with 402 monthly_allocation_exhausted, whatever the wallet holds', async () => {
      const a = await seed(s).account({ tier: 'free' }).wallet('5.00');
      const c = client(s, a.apiKey);
      expect((await c.chat('hi #tokens=20', { max_tokens: 20 })).status).toBe(200); // 6 + 20 tokens used; 74 left

      const refused = await c.chat('hi #tokens=80', { max_tokens: 80 });
      expect(refused.status).toBe(402);
      expect(refused.body.error).toMatchObject({ type: 'insufficient_quota', code: 'monthly_allocation_exhausted', param: null });
      expect(refused.body.error.message).toContain('74 of 100 tokens are left');
      expect(refused.body.error.message).toContain(`up to ${74 - est('hi #tokens=80')} output tokens`);
      expect(await c.balance()).toBe('5');

      // Without max_tokens the call gets what the allocation still covers, and stops at that length.
      const content = 'hi #tokens=500';
      const capped = await c.chat(content);
      expect(capped.status).toBe(200);
      expect(s.upstream.requests.at(-1)!.body).toMatchObject({ max_tokens: 74 - est(content) });
      expect(capped.body.choices[0].finish_reason).toBe('length');
      expect(capped.body.usage.completion_tokens).toBe(74 - est(content));
      // The wallet is never touched on the free tier.
      expect(await c.balance()).toBe('5');
      expect((await transactions(a.id)).map((t) => t.type)).toEqual(['bonus']);
      expect((await events(a.id)).every((e) => e.walletNanos === 0n)).toBe(true);
    });

    it('refuses a paid-tier call the wallet cannot cover with 402 insufficient_balance; exactly the worst case is enough', async () => {
      const a = await seed(s).account({ tier: 'startup' }); // no allocation, empty wallet
      const c = client(s, a.apiKey);
      const content = 'q #tokens=10';
      const worst = BigInt(est(content)) * IN + 10n * OUT;

      const empty = await c.chat(content, { max_tokens: 10 });
      expect(empty.status).toBe(402);
      expect(empty.body.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_balance' });
      expect(empty.body.error.message).toContain(`needs ${usd(worst)} USD`);
      expect(empty.body.error.message).toContain('0 USD is available');
      // A stream is refused the same way, before any event: a plain 402, not an SSE body.
      const stream = await c.post('/chat/completions', {
        model: 'chat-test',
        messages: [{ role: 'user', content }],
        max_tokens: 10,
        stream: true,
      });
      expect(stream.status).toBe(402);
      expect(stream.body.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_balance' });
      expect(await events(a.id)).toEqual([]);

      await credit(s, a.id, usd(worst));
      expect((await c.chat(content, { max_tokens: 10 })).status).toBe(200);
      // Charged the real usage: 6 prompt + 10 completion tokens; the rest of the hold is released.
      const charge = BigInt(fakePrompt(content)) * IN + 10n * OUT;
      expect(await c.balance()).toBe(usd(worst - charge));

      // One nano short of the worst case: refused; one nano more: served.
      await credit(s, a.id, usd(charge - 1n));
      expect(await c.balance()).toBe(usd(worst - 1n));
      const short = await c.chat(content, { max_tokens: 10 });
      expect(short.status).toBe(402);
      expect(short.body.error.code).toBe('insufficient_balance');
      expect(short.body.error.message).toContain(`${usd(worst - 1n)} USD is available`);
      await credit(s, a.id, '0.000000001');
      expect((await c.chat(content, { max_tokens: 10 })).status).toBe(200);
      expect(await c.balance()).toBe(usd(worst - charge));

      // n = 3 holds 3 × max_tokens; what the wallet pays for is said per choice, as max_tokens is.
      await credit(s, a.id, usd(charge));
      const chat = (max_tokens: number) =>
        c.post('/chat/completions', { model: 'chat-test', messages: [{ role: 'user', content }], max_tokens, n: 3 });
      const three = await chat(10);
      expect(three.status).toBe(402);
      expect(three.body.error.message).toContain('+ 30 output)');
      expect(three.body.error.message).toContain('up to 3 output tokens for each of its 3 choices (n): lower max_tokens or n');
      expect((await chat(3)).status).toBe(200);
    });

    it('without max_tokens, lowers the maximum to what the wallet pays for, and refuses when not one token is affordable', async () => {
      const content = 'r #tokens=100';
      const budget = BigInt(est(content)) * IN + 5n * OUT;
      const a = await seed(s).account({ tier: 'startup' }).wallet(usd(budget));
      const c = client(s, a.apiKey);
      const r = await c.chat(content);
      expect(r.status).toBe(200);
      expect(s.upstream.requests.at(-1)!.body).toMatchObject({ max_tokens: 5 });
      expect(r.body.usage.completion_tokens).toBe(5);
      expect(r.body.choices[0].finish_reason).toBe('length');
      const left = budget - (BigInt(fakePrompt(content)) * IN + 5n * OUT);
      expect(await c.balance()).toBe(usd(left));
      // What is left pays for the prompt but not one output token.
      expect(left).toBeLessThan(BigInt(est(content)) * IN + OUT);
      const none = await c.chat(content);
      expect(none.status).toBe(402);
      expect(none.body.error.code).toBe('insufficient_balance');
    });
  });

  describe('account settings', () => {
    const SET_LIMIT =
      'mutation($i: SpendingLimitInput!) { updateSpendingLimit(input: $i) { spendingLimit { enabled monthlyLimit action } monthlySpend } }';
    /** As the account's owner, signed in to the dashboard (an API key may not lift or set limits). */
    const setLimit = async (accountId: string, input: Record<string, unknown>) =>
      (await signedIn(s, accountId)).graphql(SET_LIMIT, { i: input });

    it('only a dashboard session changes the spending limit, the low-balance alert and the alerts: an API key gets session_required and changes nothing', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
      const c = client(s, a.apiKey);
      const owner = await signedIn(s, a.id);
      expect((await setLimit(a.id, { enabled: true, monthlyLimit: '5', action: 'block' })).body.errors).toBeUndefined();
      expect((await owner.graphql('mutation { setLowBalanceAlert(threshold: "2") { lowBalanceAlert } }')).body.errors).toBeUndefined();
      const before = await c.graphql(
        '{ viewer { settings { spendingLimit { enabled monthlyLimit action } lowBalanceAlert } alertSettings { lowBalance extraRecipients } } }',
      );
      for (const mutation of [
        'mutation { updateSpendingLimit(input: { enabled: false }) { monthlySpend } }',
        'mutation { setLowBalanceAlert(threshold: null) { lowBalanceAlert } }',
        'mutation { updateAlertSettings(input: { lowBalance: false, extraRecipients: ["someone@example.com"] }) { lowBalance } }',
        'mutation { updateAutoTopup(input: { enabled: false }) { enabled } }',
      ]) {
        const r = await c.graphql(mutation);
        expect(r.body.errors?.[0]?.extensions?.code, mutation).toBe('session_required');
        expect(r.body.errors?.[0]?.message).toBe(
          'Sign in to the dashboard for this: API keys cannot manage keys, passwords, sessions, automatic top-up, spending limits or alerts.',
        );
      }
      const after = await c.graphql(
        '{ viewer { settings { spendingLimit { enabled monthlyLimit action } lowBalanceAlert } alertSettings { lowBalance extraRecipients } } }',
      );
      expect(after.body.data).toEqual(before.body.data);
      expect(before.body.data.viewer.settings).toEqual({
        spendingLimit: { enabled: true, monthlyLimit: '5', action: 'block' },
        lowBalanceAlert: '2',
      });
    });

    it('a block spending limit refuses with 402 spending_limit_reached; an alert limit writes one notification a period', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
      const c = client(s, a.apiKey);
      const content = 'a #tokens=5';
      const charge = BigInt(fakePrompt(content)) * IN + 5n * OUT; // 16,000 nanos

      const set = await setLimit(a.id, { enabled: true, monthlyLimit: '0.00003', action: 'block' });
      expect(set.body.data.updateSpendingLimit).toEqual({
        spendingLimit: { enabled: true, monthlyLimit: '0.00003', action: 'block' },
        monthlySpend: '0',
      });
      expect((await c.chat(content, { max_tokens: 5 })).status).toBe(200);
      // 16,000 spent: the next worst case (more than 14,000) would pass 30,000.
      const blocked = await c.chat(content, { max_tokens: 5 });
      expect(blocked.status).toBe(402);
      expect(blocked.body.error).toMatchObject({ type: 'insufficient_quota', code: 'spending_limit_reached' });
      expect(blocked.body.error.message).toContain('spending limit of 0.00003 USD: 0.000016 USD is spent');
      expect(await c.balance()).toBe(usd(1_000_000_000n - charge));
      const settings = await c.graphql('{ viewer { settings { monthlySpend spendingLimit { enabled monthlyLimit action } } } }');
      expect(settings.body.data.viewer.settings).toEqual({
        monthlySpend: '0.000016',
        spendingLimit: { enabled: true, monthlyLimit: '0.00003', action: 'block' },
      });
      // The spend stays under a block limit, so the first refusal is what tells the customer (once a period).
      const refusedNotes = await until(async () => {
        const list = await s.services.billing.listNotifications(a.id);
        return list.length > 0 && list;
      });
      expect(refusedNotes.map((n) => [n.kind, n.payload])).toEqual([
        [
          'spending_limit',
          { period: expect.any(String), spent: '0.000016', held: '0', limit: '0.00003', action: 'block', currency: 'USD' },
        ],
      ]);
      expect((await c.chat(content, { max_tokens: 5 })).status).toBe(402);
      await new Promise((r) => setTimeout(r, 100));
      expect(await s.services.billing.listNotifications(a.id)).toHaveLength(1);

      // In alert mode the call runs, and passing the (new: re-armed) limit is notified once this period.
      await setLimit(a.id, { enabled: true, monthlyLimit: '0.00002', action: 'alert' });
      expect((await c.chat(content, { max_tokens: 5 })).status).toBe(200);
      expect((await c.chat(content, { max_tokens: 5 })).status).toBe(200);
      const notes = await s.services.billing.listNotifications(a.id);
      expect(notes.map((n) => n.kind)).toEqual(['spending_limit', 'spending_limit']);
      expect(notes[1]!.payload).toMatchObject({ spent: '0.000032', limit: '0.00002', action: 'alert', currency: 'USD' });

      // Disabled: no limit applies.
      await setLimit(a.id, { enabled: false });
      expect((await c.chat(content, { max_tokens: 5 })).status).toBe(200);
      const refusedInput = await setLimit(a.id, { enabled: true, action: 'block' });
      expect(refusedInput.body.errors[0].extensions).toMatchObject({ code: 'missing_required_parameter' });
    });

    it('each change of the spending limit re-arms its alert, even back to a limit already notified this period', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
      const c = client(s, a.apiKey);
      const call = () => c.chat('a #tokens=5', { max_tokens: 5 }); // 16,000 nanos each
      const notes = () => s.services.billing.listNotifications(a.id);
      const count = (n: number) => until(async () => (await notes()).length >= n && notes());

      // Passing an alert limit of 0.00001: "Spending limit passed".
      await setLimit(a.id, { enabled: true, monthlyLimit: '0.00001', action: 'alert' });
      expect((await call()).status).toBe(200);
      expect((await count(1)).map((n) => n.payload.action)).toEqual(['alert']);

      // The same limit, now blocking: the next call is refused, and that refusal is notified.
      await setLimit(a.id, { enabled: true, monthlyLimit: '0.00001', action: 'block' });
      const refused = await call();
      expect(refused.status).toBe(402);
      expect(refused.body.error.code).toBe('spending_limit_reached');
      expect((await count(2)).map((n) => n.payload.action)).toEqual(['alert', 'block']);
      expect((await call()).status).toBe(402);

      // Off, then the very same block limit again: a new occasion, notified at its first refusal.
      await setLimit(a.id, { enabled: false });
      await setLimit(a.id, { enabled: true, monthlyLimit: '0.00001', action: 'block' });
      expect((await call()).status).toBe(402);
      const all = await count(3);
      expect(all.map((n) => [n.kind, n.payload.action, n.payload.limit, n.payload.spent])).toEqual([
        ['spending_limit', 'alert', '0.00001', '0.000016'],
        ['spending_limit', 'block', '0.00001', '0.000016'],
        ['spending_limit', 'block', '0.00001', '0.000016'],
      ]);
      // Once per arming: more refusals write nothing more.
      expect((await call()).status).toBe(402);
      await new Promise((r) => setTimeout(r, 100));
      expect(await notes()).toHaveLength(3);
      // Saved again unchanged (the settings form's Save once more): not a new occasion.
      await setLimit(a.id, { enabled: true, monthlyLimit: '0.00001', action: 'block' });
      expect((await call()).status).toBe(402);
      await new Promise((r) => setTimeout(r, 100));
      expect(await notes()).toHaveLength(3);
    });

    it('does not call the monthly tokens used up while calls in flight hold them: a refusal then writes nothing', async () => {
      const a = await seed(s).account({ tier: 'free' });
      const c = client(s, a.apiKey);
      // One slow call holds most of the 100 tokens (its prompt and max_tokens) and uses few of them.
      const slow = c.chat('a #delay=800 #tokens=2', { max_tokens: 80 });
      await until(async () => (await s.services.billing.countOpenHolds()) > 0);
      const refused = await c.chat('b #tokens=1', { max_tokens: 20 });
      expect(refused.status).toBe(402);
      expect(refused.body.error.code).toBe('monthly_allocation_exhausted');
      expect((await slow).status).toBe(200);
      await new Promise((r) => setTimeout(r, 100));
      expect((await s.services.billing.listNotifications(a.id)).map((n) => n.kind)).toEqual([]);
      expect((await s.services.billing.getAllocation(a.id)).used).toBeLessThan(20);
    });

    it('writes a low-balance alert once per crossing below the threshold', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('0.00005');
      const c = client(s, a.apiKey);
      const owner = await signedIn(s, a.id);
      const r = await owner.graphql('mutation { setLowBalanceAlert(threshold: "0.00004") { lowBalanceAlert } }');
      expect(r.body.data.setLowBalanceAlert).toEqual({ lowBalanceAlert: '0.00004' });
      const call = () => c.chat('a #tokens=5', { max_tokens: 5 }); // 16,000 nanos each

      expect((await call()).status).toBe(200); // 50,000 → 34,000: crosses below 40,000
      expect((await call()).status).toBe(200); // 18,000: still below, no second alert
      expect((await s.services.billing.listNotifications(a.id)).map((n) => n.kind)).toEqual(['low_balance']);
      await credit(s, a.id, '0.00003'); // 48,000: above again
      expect((await call()).status).toBe(200); // 32,000: a new crossing
      const notes = await s.services.billing.listNotifications(a.id);
      expect(notes.map((n) => n.kind)).toEqual(['low_balance', 'low_balance']);
      expect(notes[1]!.payload).toEqual({ balance: '0.000032', threshold: '0.00004', currency: 'USD' });
      const cleared = await owner.graphql('mutation { setLowBalanceAlert(threshold: null) { lowBalanceAlert } }');
      expect(cleared.body.data.setLowBalanceAlert.lowBalanceAlert).toBeNull();
    });

    it('writes an alert once when 80% of the monthly allocation is used', async () => {
      const a = await seed(s).account({ tier: 'developer' }).wallet('1.00');
      const c = client(s, a.apiKey);
      expect((await c.chat('a #tokens=30', { max_tokens: 30 })).status).toBe(200); // 36 of 50: 72%
      expect(await s.services.billing.listNotifications(a.id)).toEqual([]);
      expect((await c.chat('a #tokens=2', { max_tokens: 2 })).status).toBe(200); // 44 of 50: 88%
      expect((await c.chat('a #tokens=2', { max_tokens: 2 })).status).toBe(200);
      const notes = await s.services.billing.listNotifications(a.id);
      // The third call also used the last of the 50 tokens: "monthly tokens used up", once too.
      expect(notes.map((n) => n.kind)).toEqual(['allocation_80', 'allocation_100']);
      expect(notes[0]!.payload).toMatchObject({ used: 44, monthly_tokens: 50 });
      expect(notes[1]!.payload).toMatchObject({ monthly_tokens: 50 });
    });

    it('writes only "used up" when one call uses the last tokens from below 80%, and no 80% alert after it', async () => {
      const a = await seed(s).account({ tier: 'developer' }).wallet('1.00');
      const c = client(s, a.apiKey);
      expect((await c.chat('a #tokens=2', { max_tokens: 2 })).status).toBe(200); // 8 of 50
      expect((await c.chat('a #tokens=50', { max_tokens: 50 })).status).toBe(200); // past 50: 80% and 100% at once
      expect((await c.chat('a #tokens=2', { max_tokens: 2 })).status).toBe(200); // from the wallet
      const notes = await s.services.billing.listNotifications(a.id);
      expect(notes.map((n) => n.kind)).toEqual(['allocation_100']);
    });

    // The fake upstream reports a prompt of 6 tokens ('a #tokens=N'); admission counts it as 12.
    it("writes the 80% and 100% alerts again for another tier's allocation taken within the month", async () => {
      const a = await seed(s).account({ tier: 'developer' }).wallet('1.00');
      const c = client(s, a.apiKey);
      const kinds = async () => (await s.services.billing.listNotifications(a.id)).map((n) => [n.kind, n.payload.monthly_tokens]);
      expect((await c.chat('a #tokens=38', { max_tokens: 38 })).status).toBe(200); // 44 of 50
      expect((await c.chat('a #tokens=5', { max_tokens: 5 })).status).toBe(200); // 50 of 50, the rest from the wallet
      expect(await kinds()).toEqual([
        ['allocation_80', 50],
        ['allocation_100', 50],
      ]);
      // free: 100 tokens, 50 of them used; its own lines are 80 and 100.
      await s.services.billing.setTier(a.id, 'free');
      expect((await c.chat('a #tokens=24', { max_tokens: 24 })).status).toBe(200); // 80 of 100
      expect((await c.chat('a #tokens=8', { max_tokens: 8 })).status).toBe(200); // 94 of 100
      // What is left (6) cannot cover a prompt: the first such refusal writes "used up".
      expect((await c.chat('a #tokens=1', { max_tokens: 1 })).status).toBe(402);
      await until(async () => (await kinds()).length === 4);
      expect(await kinds()).toEqual([
        ['allocation_80', 50],
        ['allocation_100', 50],
        ['allocation_80', 100],
        ['allocation_100', 100],
      ]);
    });

    it('writes no "monthly tokens used up" for a prompt larger than what is left of a mostly unused allocation; the real crossing still does', async () => {
      const a = await seed(s).account({ tier: 'free' });
      const c = client(s, a.apiKey);
      const notes = async () => (await s.services.billing.listNotifications(a.id)).map((n) => n.kind);
      expect((await c.chat('a #tokens=4', { max_tokens: 4 })).status).toBe(200); // 10 of 100
      const huge = await c.chat(`${'word '.repeat(120)}#tokens=1`, { max_tokens: 1 });
      expect(huge.status).toBe(402);
      expect(huge.body.error.code).toBe('monthly_allocation_exhausted');
      // Given the chance to be written (it runs beside the refusal): nothing.
      await new Promise((r) => setTimeout(r, 200));
      expect(await notes()).toEqual([]);
      expect((await c.chat('a #tokens=78', { max_tokens: 78 })).status).toBe(200); // 94 of 100
      expect((await c.chat('a #tokens=1', { max_tokens: 1 })).status).toBe(402);
      await until(async () => (await notes()).length === 2);
      expect(await notes()).toEqual(['allocation_80', 'allocation_100']);
    });

    // Admission refuses a call the rest of the allocation cannot cover whole, so when the wallet
    // cannot pay (free tier: never; or an empty wallet) usage stops short of the allocation and the
    // crossing never comes: the first refusal that no smaller max_tokens could avoid writes it.
    it.each([
      ['free', 100, 'monthly_allocation_exhausted'],
      ['developer', 50, 'insufficient_balance'], // with nothing in the wallet
    ] as const)(
      'writes "monthly tokens used up" once at the first %s-tier call refused because the allocation left cannot cover even its prompt',
      async (tier, monthly, code) => {
        const a = await seed(s).account({ tier });
        const c = client(s, a.apiKey);
        const notes = () => s.services.billing.listNotifications(a.id);
        const content = 'b #tokens=1';
        const E = est(content);
        // The first call leaves exactly E + 1 tokens: the prompt and one output token.
        const firstTokens = monthly - fakePrompt('a #tokens=0') - (E + 1);
        expect((await c.chat(`a #tokens=${firstTokens}`, { max_tokens: firstTokens })).status).toBe(200);
        // Refused for its max_tokens only: a smaller one would run, so the tokens are not used up.
        const tooLong = await c.chat(content, { max_tokens: 50 });
        expect(tooLong.status).toBe(402);
        expect(tooLong.body.error.code).toBe(code);
        // One more output token fits; after it, what is left cannot cover this prompt at all.
        expect((await c.chat(content, { max_tokens: 1 })).status).toBe(200);
        const used = monthly - (E + 1) + fakePrompt(content) + 1;
        expect(used).toBeLessThan(monthly);
        const refused = await c.chat(content, { max_tokens: 1 });
        expect(refused.status).toBe(402);
        expect(refused.body.error.code).toBe(code);
        expect((await c.chat(content, { max_tokens: 1 })).status).toBe(402);

        const full = await until(async () => (await notes()).find((n) => n.kind === 'allocation_100'));
        // Written at the refusal that found the tokens used up, not at the one that asked too much.
        expect(full.payload).toEqual({ period: '2031-05', used, monthly_tokens: monthly, left: monthly - used, refused: true });
        expect((await notes()).map((n) => n.kind)).toEqual(['allocation_80', 'allocation_100']);
        const feed = await c.graphql('{ viewer { notifications(first: 5) { nodes { kind subject text } } } }');
        const mail = feed.body.data.viewer.notifications.nodes.find((n: { kind: string }) => n.kind === 'allocation_100');
        expect(mail.subject).toBe('Monthly tokens used up (2031-05)');
        expect(mail.text).toContain(`A call was refused: the ${monthly - used} tokens left of your ${monthly} monthly tokens for 2031-05`);
      },
    );
  });

  describe('tiers and models', () => {
    it('enterprise is unlimited: usage is recorded and the wallet untouched', async () => {
      const a = await seed(s).account({ tier: 'enterprise' });
      const c = client(s, a.apiKey);
      for (let i = 0; i < 3; i++) expect((await c.chat('big #tokens=200', { max_tokens: 200 })).status).toBe(200);
      expect(await c.balance()).toBe('0');
      expect(await transactions(a.id)).toEqual([]);
      const recorded = await events(a.id);
      expect(recorded.map((e) => [e.totalTokens, e.allocationTokens, e.walletNanos])).toEqual([
        [206, 0, 0n],
        [206, 0, 0n],
        [206, 0, 0n],
      ]);
      const allocation = (await c.graphql('{ viewer { allocation { monthlyTokens used remaining tier } } }')).body.data.viewer.allocation;
      expect(allocation).toEqual({ monthlyTokens: null, used: 618, remaining: null, tier: 'enterprise' });
    });

    it('charges embeddings and rerank per token at the model price; moderation is free and needs no money', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
      const c = client(s, a.apiKey);
      // 3 tokens at $0.1 per million = 300 nanos.
      const e = await c.post('/embeddings', { model: 'embed-test', input: 'one two three' });
      expect(e.status).toBe(200);
      expect(e.body.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
      expect(await c.balance()).toBe('0.9999997');
      // The query with each document: (2 + 2) + (2 + 3) = 9 tokens = 900 nanos.
      const r = await c.post('/rerank', { model: 'rerank-test', query: 'alpha beta', documents: ['alpha x', 'beta y z'] });
      expect(r.status).toBe(200);
      expect(r.body.usage.total_tokens).toBe(9);
      expect(await c.balance()).toBe('0.9999988');

      const broke = await seed(s).account({ tier: 'startup' });
      const b = client(s, broke.apiKey);
      expect((await b.post('/moderate', { model: 'guard-test', input: 'hello there' })).status).toBe(200);
      expect((await b.post('/embeddings', { model: 'embed-test', input: 'one' })).status).toBe(402);
      expect((await events(broke.id)).map((x) => [x.model, x.walletNanos])).toEqual([['guard-test', 0n]]);
    });

    it('setAccountTier moves an account between tiers, and only the operator may call it', async () => {
      const a = await seed(s).account({ tier: 'free' }).wallet('1.00');
      const c = client(s, a.apiKey);
      const denied = await s.graphql('mutation($a: ID!) { setAccountTier(accountId: $a, tier: startup) { tier } }', { a: a.id }, a.apiKey);
      expect(denied.body.errors[0].extensions.code).toBe('admin_required');
      const r = await s.graphql(
        'mutation($a: ID!) { setAccountTier(accountId: $a, tier: startup) { id tier wallet { balance } } }',
        { a: a.id },
        ADMIN_TOKEN,
      );
      expect(r.body.data.setAccountTier).toEqual({ id: a.id, tier: 'startup', wallet: { balance: '1' } });
      // Startup has no allocation here: the wallet pays.
      expect((await c.chat('x #tokens=10', { max_tokens: 10 })).status).toBe(200);
      expect(await c.balance()).toBe('0.999974');
    });

    it('an account moved to a tier whose allocation its month has already passed pays from the wallet', async () => {
      const a = await seed(s).account({ tier: 'free' }).wallet('1.00');
      const c = client(s, a.apiKey);
      const content = 'x #tokens=10';
      expect((await c.chat(content, { max_tokens: 10 })).status).toBe(200);
      expect(await c.balance()).toBe('1'); // the free allocation paid
      const moved = await s.graphql(
        'mutation($a: ID!) { setAccountTier(accountId: $a, tier: startup) { tier } }',
        { a: a.id },
        ADMIN_TOKEN,
      );
      expect(moved.body.data.setAccountTier.tier).toBe('startup');
      // Its month used more than startup's allocation of 0: each call is the wallet's, none a 500.
      for (let i = 0; i < 2; i++) expect((await c.chat(content, { max_tokens: 10 })).status).toBe(200);
      const cost = BigInt(fakePrompt(content)) * IN + 10n * OUT; // as the upstream reports its usage
      expect(await c.balance()).toBe(usd(1_000_000_000n - 2n * cost));
      const usage = await c.get('/usage');
      expect(usage.body.allocation).toMatchObject({ monthly_tokens: 0, remaining: 0 });
    });
  });

  describe('each way a call ends', () => {
    it('an engine failing before any output charges nothing', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
      const c = client(s, a.apiKey);
      expect((await c.chat('x #fail=500', { max_tokens: 10 })).status).toBe(502);
      expect(await c.balance()).toBe('1');
      expect(await events(a.id)).toMatchObject([{ outcome: 'failed', totalTokens: 0, walletNanos: 0n, allocationTokens: 0 }]);
    });

    it('an engine failing mid-stream charges the prompt and the tokens streamed until then', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
      const c = client(s, a.apiKey);
      const content = 'x #tokens=10 #fail=midstream';
      const r = await c.post('/chat/completions', {
        model: 'chat-test',
        messages: [{ role: 'user', content }],
        max_tokens: 10,
        stream: true,
      });
      expect(r.status).toBe(200);
      expect(r.text).not.toContain('[DONE]');
      // The fake streamed "w0" and " w1" before cutting the connection; the tokenizer counts them.
      const prompt = est(content);
      const completion = countTextTokens('w0 w1');
      expect(await events(a.id)).toMatchObject([{ outcome: 'failed_mid_stream', promptTokens: prompt, completionTokens: completion }]);
      expect(await c.balance()).toBe(usd(1_000_000_000n - (BigInt(prompt) * IN + BigInt(completion) * OUT)));
    });

    it('a client cutting a stream pays the prompt and the tokens generated until the engine stopped', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
      const abortedBefore = s.upstream.aborted;
      const content = 'x #tokens=50 #delay=40';
      const controller = new AbortController();
      const res = await fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content }], max_tokens: 50, stream: true }),
        signal: controller.signal,
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      let text = '';
      while ((text.match(/"content":"[^"]+"/g) ?? []).length < 3) text += new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      const [event] = await until(async () => {
        const list = await events(a.id);
        return list.length > 0 && list;
      });
      expect(event).toMatchObject({ outcome: 'client_disconnected', promptTokens: est(content) });
      expect(event!.completionTokens).toBeGreaterThanOrEqual(3);
      expect(event!.completionTokens).toBeLessThan(50);
      expect(event!.walletNanos).toBe(BigInt(est(content)) * IN + BigInt(event!.completionTokens) * OUT);
      expect(await client(s, a.apiKey).balance()).toBe(usd(1_000_000_000n - event!.walletNanos));
      // The engine was stopped: the upstream saw its client go away.
      await until(async () => s.upstream.aborted > abortedBefore);
    });

    it('a client leaving a non-streamed call before the answer is charged nothing', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
      const controller = new AbortController();
      const pending = fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'x #tokens=5 #delay=1500' }], max_tokens: 5 }),
        signal: controller.signal,
      }).catch(() => undefined);
      await until(async () => (await s.services.billing.countOpenHolds(a.id)) === 1);
      controller.abort();
      await pending;
      const [event] = await until(async () => {
        const list = await events(a.id);
        return list.length > 0 && list;
      });
      expect(event).toMatchObject({ outcome: 'client_disconnected', totalTokens: 0, walletNanos: 0n });
      expect(await client(s, a.apiKey).balance()).toBe('1');
    });

    // Over graphql-ws a mutation has no iterator to return: the operation's signal stops it.
    it.each(['completes the operation', 'closes the socket'] as const)(
      'a client leaving a chat mutation over graphql-ws before the answer (it %s) is charged nothing',
      async (how) => {
        const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
        const abortedBefore = s.upstream.aborted;
        const sentBefore = s.upstream.requests.length;
        const ws = createClient({
          url: `${s.url.replace('http', 'ws')}/graphql`,
          webSocketImpl: WebSocket,
          connectionParams: { authorization: `Bearer ${a.apiKey}` },
          retryAttempts: 0,
        });
        const received: unknown[] = [];
        const unsubscribe = ws.subscribe(
          {
            query: 'mutation($input: ChatCompletionInput!) { createChatCompletion(input: $input) { id } }',
            variables: { input: { model: 'chat-test', messages: [{ role: 'user', content: 'x #tokens=5 #delay=1500' }], maxTokens: 5 } },
          },
          { next: (v) => received.push(v), error: () => {}, complete: () => {} },
        );
        await until(async () => s.upstream.requests.length > sentBefore);
        expect(await s.services.billing.countOpenHolds(a.id)).toBe(1);
        if (how === 'completes the operation') unsubscribe();
        else await ws.dispose();
        const [event] = await until(async () => {
          const list = await events(a.id);
          return list.length > 0 && list;
        });
        expect(event).toMatchObject({ outcome: 'client_disconnected', totalTokens: 0, walletNanos: 0n });
        expect(await client(s, a.apiKey).balance()).toBe('1');
        // The engine was stopped (the upstream saw its client go), well before its 1.5 s answer.
        await until(async () => s.upstream.aborted > abortedBefore, 1_000);
        expect(received).toEqual([]);
        await ws.dispose();
      },
    );

    it.each([
      ['written with JSON escapes', (ws: WebSocket) => ws.send('{"id":"\\u0031","type":"\\u0063omplete"}')],
      ['sent as a binary frame', (ws: WebSocket) => ws.send(Buffer.from('{"id":"1","type":"complete"}'), { binary: true })],
    ] as const)('a complete message %s stops a chat mutation over graphql-ws as the plain one does', async (_how, complete) => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
      const abortedBefore = s.upstream.aborted;
      const sentBefore = s.upstream.requests.length;
      const ws = new WebSocket(`${s.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
      const received: string[] = [];
      ws.on('message', (data) => received.push(String(data)));
      await new Promise((resolve) => ws.once('open', resolve));
      ws.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${a.apiKey}` } }));
      await until(async () => received.some((m) => m.includes('connection_ack')));
      ws.send(
        JSON.stringify({
          id: '1',
          type: 'subscribe',
          payload: {
            query: 'mutation($input: ChatCompletionInput!) { createChatCompletion(input: $input) { id } }',
            variables: { input: { model: 'chat-test', messages: [{ role: 'user', content: 'x #tokens=5 #delay=1500' }], maxTokens: 5 } },
          },
        }),
      );
      await until(async () => s.upstream.requests.length > sentBefore);
      // {"id":"1","type":"complete"}, in a form graphql-ws reads as well.
      complete(ws);
      const [event] = await until(async () => {
        const list = await events(a.id);
        return list.length > 0 && list;
      });
      expect(event).toMatchObject({ outcome: 'client_disconnected', totalTokens: 0, walletNanos: 0n });
      await until(async () => s.upstream.aborted > abortedBefore, 1_000);
      expect(await client(s, a.apiKey).balance()).toBe('1');
      expect(received.filter((m) => m.includes('"next"'))).toEqual([]);
      ws.close();
    });

    it('a completed stream is billed from its usage, never as zero', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
      const c = client(s, a.apiKey);
      const content = 'abc #tokens=7';
      const r = await c.post('/chat/completions', {
        model: 'chat-test',
        messages: [{ role: 'user', content }],
        max_tokens: 7,
        stream: true,
      });
      expect(r.text).toContain('[DONE]');
      expect(await events(a.id)).toMatchObject([{ outcome: 'completed', promptTokens: fakePrompt(content), completionTokens: 7 }]);
      expect(await c.balance()).toBe(usd(1_000_000_000n - (BigInt(fakePrompt(content)) * IN + 7n * OUT)));
    });

    it('GraphQL calls are billed like /v1 calls, with the key that made them', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
      const r = await s.graphql(
        'mutation($i: ChatCompletionInput!) { createChatCompletion(input: $i) { usage { totalTokens } } }',
        { i: { model: 'chat-test', messages: [{ role: 'user', content: 'x #tokens=10' }], maxTokens: 10 } },
        a.apiKey,
      );
      expect(r.body.data.createChatCompletion.usage.totalTokens).toBe(16);
      expect(await events(a.id)).toMatchObject([{ keyId: a.keyId, model: 'chat-test', outcome: 'completed', walletNanos: 26_000n }]);
      expect((await events(a.id))[0]!.requestId).toMatch(/^\S{8,}$/);
      const refused = await s.graphql(
        'mutation($i: ChatCompletionInput!) { createChatCompletion(input: $i) { id } }',
        { i: { model: 'chat-test', messages: [{ role: 'user', content: 'x' }], maxTokens: 256 } },
        (await seed(s).account({ tier: 'startup' })).apiKey,
      );
      expect(refused.status).toBe(402);
      expect(refused.body.errors[0].extensions).toMatchObject({ code: 'insufficient_balance', type: 'insufficient_quota', status: 402 });
    });
  });

  describe('the ledger', () => {
    it('lists transactions oldest first, pages with limit/after, orders desc and filters by type', async () => {
      const a = await seed(s).account({ tier: 'startup' });
      for (let i = 1; i <= 7; i++) await credit(s, a.id, `0.${i}`, i % 2 ? 'bonus' : 'refund');
      const c = client(s, a.apiKey);

      const all = await c.get('/wallet/transactions');
      expect(all.status).toBe(200);
      expect(Object.keys(all.body)).toEqual(['transactions', 'has_more']);
      expect(all.body.has_more).toBe(false);
      expect(all.body.transactions.map((t: any) => t.amount)).toEqual([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]);
      expect(all.text).toContain('"amount":0.7,"balance_after":2.8,');
      const first = all.body.transactions[0];
      expect(Object.keys(first)).toEqual(['id', 'type', 'amount', 'balance_after', 'created_at', 'description']);
      expect(first.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      const ids = all.body.transactions.map((t: any) => t.id);

      const page1 = await c.get('/wallet/transactions?limit=3');
      expect(page1.body.transactions.map((t: any) => t.id)).toEqual(ids.slice(0, 3));
      expect(page1.body.has_more).toBe(true);
      const page2 = await c.get(`/wallet/transactions?limit=3&after=${ids[2]}`);
      expect(page2.body.transactions.map((t: any) => t.id)).toEqual(ids.slice(3, 6));
      expect(page2.body.has_more).toBe(true);
      const page3 = await c.get(`/wallet/transactions?limit=3&after=${ids[5]}`);
      expect(page3.body.transactions.map((t: any) => t.id)).toEqual(ids.slice(6));
      expect(page3.body.has_more).toBe(false);

      const desc = await c.get('/wallet/transactions?order=desc&limit=4');
      expect(desc.body.transactions.map((t: any) => t.id)).toEqual([...ids].reverse().slice(0, 4));
      const descNext = await c.get(`/wallet/transactions?order=desc&after=${ids[3]}`);
      expect(descNext.body.transactions.map((t: any) => t.id)).toEqual([ids[2], ids[1], ids[0]]);

      const refunds = await c.get('/wallet/transactions?type=refund');
      expect(refunds.body.transactions.map((t: any) => [t.type, t.amount])).toEqual([
        ['refund', 0.2],
        ['refund', 0.4],
        ['refund', 0.6],
      ]);
      const refundPage = await c.get('/wallet/transactions?type=refund&limit=2');
      expect(refundPage.body.has_more).toBe(true);
      expect((await c.get('/wallet/transactions?type=usage')).body).toEqual({ transactions: [], has_more: false });

      for (const [query, param] of [
        ['limit=0', 'limit'],
        ['limit=1001', 'limit'],
        ['limit=abc', 'limit'],
        ['order=up', 'order'],
        ['type=gift', 'type'],
        ['after=txn_doesnotexist', 'after'],
      ]) {
        const bad = await c.get(`/wallet/transactions?${query}`);
        expect(bad.status, query).toBe(400);
        expect(bad.body.error, query).toMatchObject({ type: 'invalid_request_error', code: 'invalid_value', param });
        expect(bad.body.error.message, query).not.toMatch(/Variable|enum/);
      }
      expect((await c.get('/wallet/transactions?order=up')).body.error.message).toBe("'order' must be one of asc, desc; got 'up'.");
      expect((await c.get('/wallet/transactions?type=gift')).body.error.message).toBe(
        "'type' must be one of bonus, refund, subscription, topup, usage; got 'gift'.",
      );
      // Another account's transaction id is no cursor here.
      const other = await seed(s).account({ tier: 'startup' }).wallet('1');
      const otherId = (await transactions(other.id))[0]!.id;
      expect((await c.get(`/wallet/transactions?after=${otherId}`)).status).toBe(400);
      expect((await client(s, other.apiKey).get('/wallet/transactions')).body.transactions.map((t: any) => t.id)).toEqual([otherId]);
    });

    it('pages 100 transactions by default and up to 1000 on request, and as a Relay connection in GraphQL', async () => {
      const a = await seed(s).account({ tier: 'startup' });
      for (let i = 0; i < 101; i++)
        await s.services.billing.creditWallet({ accountId: a.id, amount: 1n, type: 'bonus', description: `n${i}` });
      const c = client(s, a.apiKey);
      const page = await c.get('/wallet/transactions');
      expect(page.body.transactions).toHaveLength(100);
      expect(page.body.has_more).toBe(true);
      expect((await c.get('/wallet/transactions?limit=1000')).body.transactions).toHaveLength(101);
      expect((await c.get('/wallet/balance')).body).toEqual({ balance: 1.01e-7, currency: 'USD' });
      expect((await c.get('/wallet/balance')).text).toBe('{"balance":0.000000101,"currency":"USD"}');

      const q =
        'query($after: String) { viewer { wallet { transactions(first: 60, after: $after) { edges { cursor node { id description } } pageInfo { hasNextPage hasPreviousPage endCursor } } } } }';
      const one = (await c.graphql(q)).body.data.viewer.wallet.transactions;
      expect(one.edges).toHaveLength(60);
      expect(one.edges[0].node.description).toBe('n0');
      expect(one.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false, endCursor: one.edges[59].cursor });
      // An empty cursor is no cursor: the same first page.
      const empty = (await c.graphql(q, { after: '' })).body.data.viewer.wallet.transactions;
      expect(empty).toEqual(one);
      const two = (await c.graphql(q, { after: one.pageInfo.endCursor })).body.data.viewer.wallet.transactions;
      expect(two.edges).toHaveLength(41);
      expect(two.edges[0].node.description).toBe('n60');
      expect(two.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    });

    it('credits once per idempotency key, and only the operator credits', async () => {
      const a = await seed(s).account({ tier: 'startup' });
      const first = await credit(s, a.id, '2.5', 'refund', 'ticket-42');
      const again = await credit(s, a.id, '2.5', 'refund', 'ticket-42');
      expect(again.id).toBe(first.id);
      expect(await client(s, a.apiKey).balance()).toBe('2.5');
      const conflict = await s.graphql(
        'mutation($i: CreditWalletInput!) { creditWallet(input: $i) { id } }',
        { i: { accountId: a.id, amount: '3', type: 'refund', description: 'x', idempotencyKey: 'ticket-42' } },
        ADMIN_TOKEN,
      );
      expect(conflict.body.errors[0].extensions.code).toBe('invalid_value');
      const denied = await s.graphql(
        'mutation($i: CreditWalletInput!) { creditWallet(input: $i) { id } }',
        { i: { accountId: a.id, amount: '3', type: 'bonus', description: 'x' } },
        a.apiKey,
      );
      expect(denied.body.errors[0].extensions.code).toBe('admin_required');
      for (const amount of ['0', '-1', '0.0000000001', 'ten']) {
        const bad = await s.graphql(
          'mutation($i: CreditWalletInput!) { creditWallet(input: $i) { id } }',
          { i: { accountId: a.id, amount, type: 'bonus', description: 'x' } },
          ADMIN_TOKEN,
        );
        expect(bad.body.errors[0].extensions, amount).toMatchObject({ code: 'invalid_value', status: 400 });
      }
      expect(await client(s, a.apiKey).balance()).toBe('2.5');
    });

    it('pushes the balance after each committed change to walletUpdated subscribers', async () => {
      const a = await seed(s).account({ tier: 'startup' });
      const ws = createClient({
        url: `${s.url.replace('http', 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${a.apiKey}` },
        retryAttempts: 0,
      });
      const received: any[] = [];
      const done = new Promise<void>((resolve, reject) => {
        ws.subscribe(
          { query: 'subscription { walletUpdated { balance currency transaction { type amount balanceAfter } } }' },
          { next: (v) => received.push(v.data?.walletUpdated), error: reject, complete: resolve },
        );
      });
      await until(async () => s.services.billing.events.size > 0);
      await credit(s, a.id, '1.5');
      expect((await client(s, a.apiKey).chat('x #tokens=10', { max_tokens: 10 })).status).toBe(200);
      await until(async () => received.length >= 2);
      expect(received).toEqual([
        { balance: '1.5', currency: 'USD', transaction: { type: 'bonus', amount: '1.5', balanceAfter: '1.5' } },
        { balance: '1.499974', currency: 'USD', transaction: { type: 'usage', amount: '-0.000026', balanceAfter: '1.499974' } },
      ]);
      await ws.dispose();
      await done.catch(() => {});
      await until(async () => s.services.billing.events.size === 0);
    });
  });

  describe('the usage endpoint', () => {
    it('sums the usage events per day and model, with the allocation and what the wallet paid', async () => {
      const a = await seed(s).account({ tier: 'developer' }).wallet('1.00');
      const c = client(s, a.apiKey);
      await c.chat('a #tokens=20', { max_tokens: 20 });
      await c.chat('b c #tokens=30', { max_tokens: 30 }); // passes the allocation of 50
      await c.chat('d #tokens=5', { max_tokens: 5 });
      await c.chat('e #fail=500', { max_tokens: 5 });
      await c.post('/embeddings', { model: 'embed-test', input: ['one two', 'three'] });
      await c.post('/moderate', { model: 'guard-test', input: 'hello' });

      const r = await c.get('/usage');
      expect(r.status).toBe(200);
      const today = NOW.slice(0, 10);
      const period = today.slice(0, 7);
      expect(r.body.object).toBe('usage');
      expect(r.body.period_start).toBe(`${period}-01`);
      expect(r.body.period_end.slice(0, 7)).toBe(period);
      expect(r.body.allocation).toEqual({ monthly_tokens: 50, used: 50, remaining: 0 });

      const recorded = await events(a.id);
      const expected = new Map<string, any>();
      for (const e of recorded) {
        const key = e.model;
        const row = expected.get(key) ?? {
          date: today,
          model: e.model,
          requests: 0,
          prompt_tokens: 0,
          completion_tokens: 0,
          total_tokens: 0,
          cost: 0n,
        };
        row.requests++;
        row.prompt_tokens += e.promptTokens;
        row.completion_tokens += e.completionTokens;
        row.total_tokens += e.totalTokens;
        row.cost += e.walletNanos;
        expected.set(key, row);
      }
      const rows = [...expected.values()]
        .sort((x, y) => x.model.localeCompare(y.model))
        .map((row) => ({ ...row, cost: Number(usd(row.cost)) }));
      expect(r.body.data).toEqual(rows);
      expect(r.body.data.map((d: any) => d.model)).toEqual(['chat-test', 'embed-test', 'guard-test']);
      expect(r.body.data[0].requests).toBe(4);
      // What the usage report says was paid is what the ledger charged.
      const charged = (await transactions(a.id)).filter((t) => t.type === 'usage').reduce((sum, t) => sum - t.amount, 0n);
      expect(r.body.data.reduce((sum: bigint, row: any) => sum + parseDecimal(row.cost), 0n)).toBe(charged);
      expect(charged).toBeGreaterThan(0n);

      expect((await c.get('/usage?start=2000-01-01&end=2000-01-31')).body).toMatchObject({
        period_start: '2000-01-01',
        period_end: '2000-01-31',
        data: [],
      });
      expect((await c.get(`/usage?start=${today}&end=${today}`)).body.data).toEqual(r.body.data);
      for (const [query, param] of [
        ['start=2026-02-30', 'start'],
        ['start=yesterday', 'start'],
        ['start=2026-05-02&end=2026-05-01', 'start'],
        ['start=2020-01-01&end=2026-01-01', 'end'],
      ]) {
        const bad = await c.get(`/usage?${query}`);
        expect(bad.status, query).toBe(400);
        expect(bad.body.error, query).toMatchObject({ code: 'invalid_value', param });
      }
    });
  });

  it('answers 401 on the wallet and usage endpoints without a valid key', async () => {
    for (const path of ['/wallet/balance', '/wallet/transactions', '/usage']) {
      const r = await fetch(`${s.v1}${path}`);
      expect(r.status, path).toBe(401);
      expect((await r.json()).error.code).toBe('invalid_api_key');
    }
    // Top-ups themselves are tested with payments (test/payments-*.test.ts).
    expect((await fetch(`${s.v1}/wallet/top-up`, { method: 'POST' })).status).toBe(401);
  });
});
