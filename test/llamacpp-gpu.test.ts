// GPU offload for llama.cpp (issue 16): `llamacpp.gpu: auto | cuda | vulkan | false` picks
// node-llama-cpp's prebuilt build (never compiled or downloaded) and `engine.gpu_layers` the layers
// a GPU build offloads; the log and /readyz say where each model runs. On this machine (no GPU)
// `auto` runs the CPU build, and an explicit `cuda` or `vulkan` stops start-up with one line saying
// why and what to do. Each server is its own process: the runtime is chosen once per process.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getLlamaGpuTypes } from 'node-llama-cpp';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../src/config.js';
import { makeFixtureDir, tinyModelsYaml } from './support/llamacpp.js';
import { freePort, spawnTollgate, waitReady } from './support/ready.js';

const fixtures = makeFixtureDir();
const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-gpu-'));
afterAll(() => {
  fixtures.remove();
  rmSync(dir, { recursive: true, force: true });
});

const config = (llamacpp: string, chatEngine = '') =>
  `${llamacpp}\nmodels:\n${tinyModelsYaml(fixtures, { chatEngine, embedEngine: ', gpu_layers: 0' })}`;

function start(name: string, text: string, port: number | null) {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, text);
  return spawnTollgate(['src/main.ts'], {
    CONFIG: file,
    PORT: String(port ?? 0),
    DATABASE_URL: `sqlite:${path.join(dir, `${name}.sqlite`)}`,
  });
}

const supported = await getLlamaGpuTypes('supported');
const hasGpu = supported.some((g) => g !== false);

describe.skipIf(hasGpu)('on this machine, without a GPU', () => {
  it.each([
    ['auto (the default)', ''],
    ['false', 'llamacpp: { gpu: false }'],
  ])('llamacpp.gpu %s runs every model on the CPU build, and the log and /readyz say so', { timeout: 120_000 }, async (_, setting) => {
    const port = await freePort();
    const server = start(`cpu-${setting ? 'false' : 'auto'}`, config(setting, ', gpu_layers: max'), port);
    try {
      await waitReady(`http://127.0.0.1:${port}`);
      const ready = await (await fetch(`http://127.0.0.1:${port}/readyz`)).json();
      expect(ready.models['tiny-chat']).toMatchObject({ status: 'ready', backend: 'cpu', gpu_layers: 0 });
      expect(ready.models['tiny-chat'].layers).toBeGreaterThan(0);
      expect(ready.models['tiny-embed']).toMatchObject({ status: 'ready', backend: 'cpu', gpu_layers: 0 });
      const log = server.output();
      expect(log).toContain(
        setting ? 'llama.cpp runtime: CPU build' : 'llama.cpp runtime: CPU build (llamacpp.gpu: auto: no CUDA or Vulkan GPU found)',
      );
      expect(log).toContain('model \\"tiny-chat\\" loaded on the CPU');
      expect(log).toMatch(/"backend":"cpu","gpuLayers":0/);
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });

  it.each(['cuda', 'vulkan'])(
    'an explicit llamacpp.gpu: %s stops start-up with one line saying why and what to do',
    { timeout: 120_000 },
    async (gpu) => {
      const server = start(`explicit-${gpu}`, config(`llamacpp: { gpu: ${gpu} }`), null);
      expect(await server.exited).toBe(1);
      const out = server.output();
      const name = gpu === 'cuda' ? 'CUDA' : 'Vulkan';
      expect(out).toContain(
        `tollgate: llamacpp.gpu is "${gpu}", but node-llama-cpp's prebuilt ${name} build of llama.cpp cannot run on this machine`,
      );
      expect(out).toContain('(it supports: CPU;');
      expect(out).toContain('set llamacpp.gpu: auto');
      expect(out).not.toMatch(/\n\s+at /); // no stack trace
    },
  );
});

describe('the llamacpp config', () => {
  it('defaults to gpu: auto and takes cuda, vulkan and false', () => {
    expect(parseConfigText(config(''), 't').llamacpp).toEqual({ gpu: 'auto' });
    for (const gpu of ['cuda', 'vulkan', 'false', 'auto'])
      expect(parseConfigText(config(`llamacpp: { gpu: ${gpu} }`), 't').llamacpp.gpu).toBe(gpu === 'false' ? false : gpu);
  });
  it('takes engine.gpu_layers auto, max or a count', () => {
    for (const layers of ['auto', 'max', '0', '12']) {
      const m = parseConfigText(config('', `, gpu_layers: ${layers}`), 't').models[0]!;
      expect(m.engine.type === 'llamacpp' && m.engine.gpu_layers).toBe(/^\d+$/.test(layers) ? Number(layers) : layers);
    }
  });
  it.each([
    ['llamacpp: { gpu: rocm }', '', 'llamacpp.gpu'],
    ['llamacpp: { gpu: true }', '', 'llamacpp.gpu'],
    ['llamacpp: { gpus: auto }', '', '"gpus" (did you mean "gpu"?)'],
    ['', ', gpu_layers: -1', 'model "tiny-chat": engine.gpu_layers'],
    ['', ', gpu_layers: all', 'model "tiny-chat": engine.gpu_layers'],
  ])('refuses %s%s, naming the key', (llamacpp, engine, message) => {
    expect(() => parseConfigText(config(llamacpp, engine), 't')).toThrow(ConfigError);
    expect(() => parseConfigText(config(llamacpp, engine), 't')).toThrow(message);
  });
});
