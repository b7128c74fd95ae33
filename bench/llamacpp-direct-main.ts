// The direct side of the in-process llama.cpp benchmark (./llamacpp.ts), in a process of its own
// like tollgate's: node-llama-cpp called directly on the fixture files, one request's worth of
// work per message from the parent ({ run: 'chat' | 'embed' | 'close' }, answered with the count).
import { getLlama, LlamaLogLevel, resolveChatWrapper } from 'node-llama-cpp';
import { EMBED_INPUTS, MAX_TOKENS, MESSAGES, type Fixtures } from './llamacpp-shared.js';

/** node-llama-cpp on its own: the same prompt, template, sampling and context sizes as the engine uses. */
async function direct(files: Fixtures) {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: files.chat });
  const context = await model.createContext({ contextSize: 1024, threads: 1 });
  const sequence = context.getSequence();
  const { contextText } = resolveChatWrapper(model).generateContextState({
    chatHistory: [
      { type: 'user', text: MESSAGES[0].content },
      { type: 'model', response: [] },
    ],
  });
  const prompt = contextText.tokenize(model.tokenizer);
  const embedModel = await llama.loadModel({ modelPath: files.embedding });
  // The engine's context for max_tokens 512 on a 512-token model: 512, one batch.
  const embedContext = await embedModel.createEmbeddingContext({ contextSize: 512, batchSize: 512, threads: 1 });
  return {
    async chat() {
      await sequence.eraseContextTokenRanges([{ start: 0, end: sequence.nextTokenIndex }]);
      let n = 0;
      for await (const token of sequence.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
        if (model.isEogToken(token)) break;
        model.detokenize([token]);
        if (++n >= MAX_TOKENS) break;
      }
      return n;
    },
    async embed() {
      for (const text of EMBED_INPUTS) await embedContext.getEmbeddingFor(text);
      return EMBED_INPUTS.length;
    },
    async close() {
      await context.dispose();
      await model.dispose();
      await embedContext.dispose();
      await embedModel.dispose();
    },
  };
}

const files = JSON.parse(process.argv[2]!) as Fixtures;
const side = await direct(files);
process.on('message', async (msg: { run: 'chat' | 'embed' | 'close' }) => {
  if (msg.run === 'close') {
    await side.close();
    process.send!({ done: true }, () => process.exit(0));
    return;
  }
  process.send!({ count: await side[msg.run]() });
});
process.send!({ ready: true });
