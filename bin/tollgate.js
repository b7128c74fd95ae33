#!/usr/bin/env node
// The operator CLI's entry point: runs src/cli.ts from source through tsx.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli.ts');
process.exitCode = await runCli(process.argv);
