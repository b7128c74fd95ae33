// The README's examples, run as a reader runs them: every fenced block marked `<!-- readme-test -->`
// (shell with bash and curl, JavaScript with node, in the README's order) against a server on the
// project's offline fixtures (`npx tollgate models fixtures`), with the variables the README's
// set-up defines (BASE, TOLLGATE_KEY, ACCOUNT). An example that stops working fails here.
//
// Only two things are added to what the reader runs, to see failures the reader would see on
// their screen: curl gets --fail-with-body (an HTTP error fails the block), and in JavaScript a
// response of 400 or more, or anything written with console.error, fails the block.
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { V1_ENDPOINTS } from '../compat/router.js';
import { FIXTURE_MODEL_IDS, fixturesConfigYaml } from '../src/cli-models.js';
import { parseDecimal } from '../src/domain/billing/money.js';
import { writeFixtures } from '../src/fixtures/gguf-fixtures.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from './support/harness.js';
import { findExecutable, missing } from './support/requirements.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

interface Block {
  lang: 'sh' | 'js';
  code: string;
  /** 1-based line of the opening fence, for messages. */
  line: number;
  /** The heading the block sits under. */
  section: string;
}

function markedBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    if (/^#{2,4} /.test(lines[i]!)) section = lines[i]!.replace(/^#+ /, '');
    if (lines[i]!.trim() !== '<!-- readme-test -->') continue;
    const fence = /^```(sh|js)\s*$/.exec(lines[i + 1] ?? '');
    if (!fence) throw new Error(`README.md:${i + 1}: a readme-test marker must be followed by a \`\`\`sh or \`\`\`js block`);
    const end = lines.indexOf('```', i + 2);
    blocks.push({ lang: fence[1] as 'sh' | 'js', code: lines.slice(i + 2, end).join('\n'), line: i + 2, section });
    i = end;
  }
  return blocks;
}

const blocks = markedBlocks(README);
const jsPrelude = blocks.find((b) => b.lang === 'js' && b.code.includes('new OpenAI('));

/** What in a block's text counts as calling each endpoint (a path, or the SDK method that calls it). */
const COVERS: Record<string, RegExp> = {
  'GET /v1/models': /\/v1\/models\b|client\.models\.list\(/,
  'GET /v1/models/{id}': /\/v1\/models\/[\w-]+|client\.models\.retrieve\(/,
  'POST /v1/chat/completions': /\/v1\/chat\/completions|client\.chat\.completions\.create\(/,
  'POST /v1/embeddings': /\/v1\/embeddings|client\.embeddings\.create\(/,
  'POST /v1/rerank': /\/v1\/rerank/,
  'POST /v1/moderate': /\/v1\/moderate\b/,
  'POST /v1/moderations': /\/v1\/moderations|client\.moderations\.create\(/,
  'GET /v1/wallet/balance': /\/v1\/wallet\/balance/,
  'GET /v1/wallet/transactions': /\/v1\/wallet\/transactions/,
  'POST /v1/wallet/top-up': /\/v1\/wallet\/top-up/,
  'GET /v1/usage': /\/v1\/usage/,
  'POST /graphql': /\/graphql' -H|\$BASE\/graphql/,
  'graphql-ws subscription': /createClient\(/,
  'POST {checkout_url}/complete': /\/complete"/,
};

// In JavaScript blocks: an HTTP error or a console.error is a failure the reader would notice.
const JS_GUARD = `
const realFetch = globalThis.fetch;
globalThis.fetch = async (...args) => {
  const res = await realFetch(...args);
  if (res.status >= 400) throw new Error(\`HTTP \${res.status} from \${res.url}: \${await res.clone().text()}\`);
  return res;
};
console.error = (...args) => { process.stderr.write(args.map(String).join(' ') + '\\n'); process.exitCode = 1; };
`;

function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: ROOT, env, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

describe('the README', () => {
  it('marks shell and JavaScript examples that call every documented endpoint', () => {
    const text = blocks.map((b) => b.code).join('\n');
    for (const endpoint of V1_ENDPOINTS) expect(Object.keys(COVERS), `a pattern for ${endpoint}`).toContain(endpoint);
    for (const [endpoint, pattern] of Object.entries(COVERS)) expect(pattern.test(text), `no marked example calls ${endpoint}`).toBe(true);
    expect(blocks.filter((b) => b.lang === 'sh').length).toBeGreaterThan(5);
    expect(blocks.filter((b) => b.lang === 'js').length).toBeGreaterThan(5);
    expect(jsPrelude).toBeDefined();
  });

  it("names only the offline catalog's model ids, and needs no tool it does not install", () => {
    const ids = new Set<string>(Object.values(FIXTURE_MODEL_IDS));
    const named = [...README.matchAll(/"model"\s*:\s*"([^"]+)"|\bmodel: '([^']+)'|\/v1\/models\/([\w-]+)|retrieve\('([^']+)'\)/g)].map(
      (m) => m[1] ?? m[2] ?? m[3] ?? m[4]!,
    );
    expect(named.length).toBeGreaterThan(10);
    expect(named.filter((id) => !ids.has(id) && id !== 'upstream-model-name')).toEqual([]);
    for (const b of blocks) expect(b.code, `README.md:${b.line}`).not.toMatch(/\b(uuidgen|jq|python3?|wget)\b/);
  });
});

const CURL = findExecutable('curl');
const BASH = findExecutable('bash');

describe.skipIf(missing('curl and bash (the README examples are shell)', CURL !== null && BASH !== null))(
  "the README's examples, run against a server on the offline fixtures",
  () => {
    let s: TestServer;
    let dir: string;
    let env: NodeJS.ProcessEnv;
    let account: { id: string };

    beforeAll(async () => {
      dir = mkdtempSync(path.join(tmpdir(), 'tollgate-readme-'));
      const files = writeFixtures(path.join(dir, 'fixtures'));
      s = await startTestServer({ yaml: () => fixturesConfigYaml(files) });
      await s.services.engines.startLoading();
      // The README's set-up: a developer account, its key, and 10 USD of first credits.
      const created = await s.services.accounts.createAccount({ email: 'you@example.com', tier: 'developer' });
      account = created.account;
      await s.services.billing.creditWallet({
        accountId: account.id,
        amount: parseDecimal('10'),
        type: 'bonus',
        description: 'first credits',
        idempotencyKey: null,
      });
      // curl as the reader's, failing on an HTTP error instead of printing it and going on.
      const bin = path.join(dir, 'bin');
      mkdirSync(bin);
      writeFileSync(path.join(bin, 'curl'), `#!/bin/sh\nexec ${JSON.stringify(CURL)} --fail-with-body "$@"\n`);
      chmodSync(path.join(bin, 'curl'), 0o755);
      env = {
        ...process.env,
        PATH: `${bin}${path.delimiter}${process.env.PATH}`,
        BASE: s.url,
        TOLLGATE_KEY: created.apiKey,
        ACCOUNT: account.id,
        // The operator's examples (the test server's admin token).
        ADMIN_TOKEN,
      };
    }, 120_000);
    afterAll(async () => {
      await s?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    // Each block in README order (later ones rely on earlier ones as a reader's would: the credits).
    for (const block of blocks) {
      it(`runs the ${block.lang} example at README.md:${block.line} (${block.section})`, { timeout: 150_000 }, async () => {
        let result: { code: number; stdout: string; stderr: string };
        if (block.lang === 'sh') {
          result = await run(BASH!, ['-e', '-o', 'pipefail', '-c', block.code], env);
        } else {
          // ESM beside the repository's node_modules, so that 'openai', 'graphql-ws' and 'ws' resolve.
          const scratch = mkdtempSync(path.join(ROOT, '.readme-test-'));
          try {
            const prelude = block !== jsPrelude && /\bclient\./.test(block.code) ? jsPrelude!.code : '';
            const file = path.join(scratch, 'example.mjs');
            writeFileSync(file, `${JS_GUARD}\n${prelude}\n${block.code}\n`);
            result = await run(process.execPath, [file], env);
          } finally {
            rmSync(scratch, { recursive: true, force: true });
          }
        }
        expect(result.stderr, `stderr of README.md:${block.line}`).toBe('');
        expect(result.code, `exit code of README.md:${block.line}`).toBe(0);
        // A stream that fails after it started ends with an error event (HTTP 200): that fails too;
        // so does a GraphQL answer with errors (HTTP 200 when the document itself is valid).
        expect(result.stdout).not.toMatch(/"error"\s*:\s*\{/);
        expect(result.stdout).not.toMatch(/"errors"\s*:\s*\[/);
      });
    }

    it('leaves usage visible in the wallet, currency codes as documented, and the ledger consistent', async () => {
      const usage = await s.services.billing.listTransactions(account.id, { limit: 1000, type: 'usage' });
      expect(usage.transactions.length).toBeGreaterThan(5);
      expect(usage.transactions.every((t) => t.amount < 0n)).toBe(true);
      const balance = await fetch(`${s.v1}/wallet/balance`, { headers: { authorization: `Bearer ${env.TOLLGATE_KEY}` } }).then((r) =>
        r.json(),
      );
      expect(balance.currency).toBe('USD');
      const models = await fetch(`${s.v1}/models`).then((r) => r.json());
      expect(new Set(models.data.map((m: any) => m.pricing.currency))).toEqual(new Set(['usd']));
      expect(models.data.every((m: any) => m.available === true)).toBe(true);
      expect(await s.services.billing.verifyLedger()).toEqual([]);
    });
  },
);
