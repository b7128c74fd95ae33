// Debian's Chromium through playwright-core, launched the one way the browser tests and the
// dashboard bench share: headless, without the sandbox (CI runs as root), and without background
// networking (this machine has no internet, and Chromium's own connections would be refused).
import { type Browser, chromium } from 'playwright-core';

const ARGS = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, args: ARGS });
}
