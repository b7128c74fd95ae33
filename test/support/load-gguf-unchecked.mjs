// Loads a GGUF with node-llama-cpp directly, without tollgate's pre-flight inspection, and prints
// "loaded" or "threw: …". Run as a child process by tests that show what the inspection prevents:
// on some malformed files llama.cpp aborts the whole process.
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';

const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.disabled });
try {
  await llama.loadModel({ modelPath: process.argv[2] });
  console.log('loaded');
} catch (e) {
  console.log(`threw: ${e.message}`);
}
