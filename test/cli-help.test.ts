// `tollgate --help`: the program's description names what its commands operate, every group of them.
import { describe, expect, it } from 'vitest';
import { runCli } from '../src/cli.js';

/** Each top-level command, and the words of the program's description that stand for it. */
const NAMED_AS: Record<string, string> = {
  accounts: 'accounts',
  keys: 'API keys',
  limits: 'rate limits',
  wallet: 'wallets',
  ledger: 'ledger',
  models: 'model files',
  mail: 'e-mail',
  db: 'database',
};

describe('tollgate --help', () => {
  it('describes the program by everything its commands operate, not only accounts and keys', async () => {
    let out = '';
    const code = await runCli(['node', 'tollgate', '--help'], { stdout: (t) => (out += t), stderr: (t) => (out += t), env: {} });
    expect(code).toBe(0);
    const commands = [...out.split('Commands:')[1]!.matchAll(/^ {2}([a-z-]+)\b/gm)].map((m) => m[1]).filter((c) => c !== 'help');
    expect(commands.sort()).toEqual(Object.keys(NAMED_AS).sort());
    const description = out.split('\n\n')[1]!.replace(/\s+/g, ' ');
    for (const [command, words] of Object.entries(NAMED_AS)) expect(description, command).toContain(words);
  });
});
