// The CLI run in this process (runCli, the entry bin/tollgate.js calls), its output captured:
// progress as plain lines, the environment this process has plus `env`.
import { runCli } from '../../src/cli.js';

export async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['node', 'tollgate', ...args], {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env: { ...process.env, TOLLGATE_PROGRESS: 'lines', ...env },
  });
  return { code, stdout, stderr };
}
