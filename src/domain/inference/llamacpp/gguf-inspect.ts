// Pre-flight inspection of a GGUF file, before llama.cpp sees it. llama.cpp aborts the whole process
// (GGML_ASSERT, SIGABRT) on some malformed files instead of throwing: a llama model without
// `llama.feed_forward_length` or `llama.attention.head_count`, or a vocabulary with duplicate tokens
// (docs/llamacpp-notes.md). So every file is read here first, with bounds checked against the file
// size, and refused with a message naming the file and the problem.
//
// Why a reader of our own rather than node-llama-cpp's `readGgufFileInfo`: on a file truncated inside
// its metadata that reader reads zeros past the end and reports success (checked with 3.21.1), and an
// absurd array length makes it allocate before failing. This one never reads past the end.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { GGUF_MAGIC, GgufValueType } from './gguf-format.js';

export type GgufScalar = number | bigint | boolean | string;
export type GgufMetadataValue = GgufScalar | GgufScalar[];

export interface GgufTensorInfo {
  name: string;
  dims: number[];
  type: number;
  /** Absolute offset of the tensor's data in the file. */
  fileOffset: number;
  /** Byte size, or null for a ggml type this reader does not know. */
  byteSize: number | null;
}

export interface GgufFileInfo {
  file: string;
  version: number;
  fileSize: number;
  metadata: Map<string, GgufMetadataValue>;
  tensors: GgufTensorInfo[];
  architecture: string;
}

/** A model file that cannot be served: missing, unreadable, malformed, or one llama.cpp would crash on. */
export class ModelFileError extends Error {
  /** The file is not there at all (it may be pulled later). */
  readonly missing: boolean;

  constructor(
    readonly file: string,
    readonly problem: string,
    opts: { missing?: boolean } = {},
  ) {
    super(`${file}: ${problem}`);
    this.name = 'ModelFileError';
    this.missing = opts.missing ?? false;
  }
}

/** ggml type → [block size, bytes per block] (ggml.c's type traits), for the tensor bounds check. */
const GGML_TYPE_SIZES: Record<number, [number, number]> = {
  0: [1, 4], // F32
  1: [1, 2], // F16
  2: [32, 18], // Q4_0
  3: [32, 20], // Q4_1
  6: [32, 22], // Q5_0
  7: [32, 24], // Q5_1
  8: [32, 34], // Q8_0
  9: [32, 36], // Q8_1
  10: [256, 84], // Q2_K
  11: [256, 110], // Q3_K
  12: [256, 144], // Q4_K
  13: [256, 176], // Q5_K
  14: [256, 210], // Q6_K
  15: [256, 292], // Q8_K
  16: [256, 66], // IQ2_XXS
  17: [256, 74], // IQ2_XS
  18: [256, 98], // IQ3_XXS
  19: [256, 50], // IQ1_S
  20: [32, 18], // IQ4_NL
  21: [256, 110], // IQ3_S
  22: [256, 82], // IQ2_S
  23: [256, 136], // IQ4_XS
  24: [1, 1], // I8
  25: [1, 2], // I16
  26: [1, 4], // I32
  27: [1, 8], // I64
  28: [1, 8], // F64
  29: [256, 56], // IQ1_M
  30: [1, 2], // BF16
  34: [256, 54], // TQ1_0
  35: [256, 66], // TQ2_0
  39: [32, 17], // MXFP4
};

const SCALAR_SIZES: Partial<Record<GgufValueType, number>> = {
  [GgufValueType.UINT8]: 1,
  [GgufValueType.INT8]: 1,
  [GgufValueType.UINT16]: 2,
  [GgufValueType.INT16]: 2,
  [GgufValueType.UINT32]: 4,
  [GgufValueType.INT32]: 4,
  [GgufValueType.FLOAT32]: 4,
  [GgufValueType.BOOL]: 1,
  [GgufValueType.UINT64]: 8,
  [GgufValueType.INT64]: 8,
  [GgufValueType.FLOAT64]: 8,
};

const MAX_STRING = 64 * 1024 * 1024;
const MAX_DIMS = 4;

class Truncated extends Error {}

/** Reads a file forward through a window, refusing to go past its end. */
class BoundedReader {
  private window = Buffer.alloc(0);
  private windowStart = 0;
  pos = 0;

  constructor(
    private readonly fd: number,
    readonly size: number,
  ) {}

  private need(n: number): Buffer {
    if (n < 0 || this.pos + n > this.size) throw new Truncated();
    const rel = this.pos - this.windowStart;
    if (rel < 0 || rel + n > this.window.length) {
      const length = Math.min(Math.max(n, 1 << 20), this.size - this.pos);
      this.window = Buffer.alloc(length);
      let read = 0;
      while (read < length) {
        const got = readSync(this.fd, this.window, read, length - read, this.pos + read);
        if (got === 0) throw new Truncated();
        read += got;
      }
      this.windowStart = this.pos;
    }
    const start = this.pos - this.windowStart;
    this.pos += n;
    return this.window.subarray(start, start + n);
  }

  u8 = () => this.need(1).readUInt8(0);
  i8 = () => this.need(1).readInt8(0);
  u16 = () => this.need(2).readUInt16LE(0);
  i16 = () => this.need(2).readInt16LE(0);
  u32 = () => this.need(4).readUInt32LE(0);
  i32 = () => this.need(4).readInt32LE(0);
  f32 = () => this.need(4).readFloatLE(0);
  f64 = () => this.need(8).readDoubleLE(0);
  u64 = () => this.need(8).readBigUInt64LE(0);
  i64 = () => this.need(8).readBigInt64LE(0);

  /** A u64 count that must fit in what is left of the file, `minBytes` bytes per item at least. */
  count(minBytes: number): number {
    const n = this.u64();
    if (n * BigInt(Math.max(minBytes, 1)) > BigInt(this.size - this.pos)) throw new Truncated();
    return Number(n);
  }

  str(): string {
    const n = this.count(1);
    if (n > MAX_STRING) throw new Truncated();
    return this.need(n).toString('utf8');
  }
}

function readScalar(r: BoundedReader, type: number, file: string): GgufScalar {
  switch (type) {
    case GgufValueType.UINT8:
      return r.u8();
    case GgufValueType.INT8:
      return r.i8();
    case GgufValueType.UINT16:
      return r.u16();
    case GgufValueType.INT16:
      return r.i16();
    case GgufValueType.UINT32:
      return r.u32();
    case GgufValueType.INT32:
      return r.i32();
    case GgufValueType.FLOAT32:
      return r.f32();
    case GgufValueType.BOOL:
      return r.u8() !== 0;
    case GgufValueType.STRING:
      return r.str();
    case GgufValueType.UINT64: {
      const v = r.u64();
      return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
    }
    case GgufValueType.INT64: {
      const v = r.i64();
      return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
    }
    case GgufValueType.FLOAT64:
      return r.f64();
    default:
      throw new ModelFileError(file, `refused: unknown GGUF value type ${type} (not a valid GGUF file)`);
  }
}

/** Reads the header, every key/value and every tensor info; throws ModelFileError on anything malformed. */
export function readGgufFile(file: string): GgufFileInfo {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new ModelFileError(file, 'the model file is missing', { missing: true });
    throw new ModelFileError(file, `cannot open the model file (${code ?? (e as Error).message})`);
  }
  try {
    const size = fstatSync(fd).size;
    const r = new BoundedReader(fd, size);
    try {
      if (size < 24) throw new ModelFileError(file, `refused: not a GGUF file (${size} bytes, too short for a header)`);
      const magic = r.u32();
      if (magic !== GGUF_MAGIC) {
        const shown = Buffer.alloc(4);
        shown.writeUInt32LE(magic);
        throw new ModelFileError(file, `refused: not a GGUF file (bad magic ${JSON.stringify(shown.toString('latin1'))}, expected "GGUF")`);
      }
      const version = r.u32();
      if (version !== 2 && version !== 3)
        throw new ModelFileError(file, `refused: unsupported GGUF version ${version} (2 and 3 are supported)`);
      const tensorCount = r.count(8 + 4 + 4 + 8);
      const kvCount = r.count(8 + 4);
      const metadata = new Map<string, GgufMetadataValue>();
      for (let i = 0; i < kvCount; i++) {
        const key = r.str();
        const type = r.u32();
        let value: GgufMetadataValue;
        if (type === GgufValueType.ARRAY) {
          const itemType = r.u32();
          if (itemType === GgufValueType.ARRAY) throw new ModelFileError(file, `refused: key "${key}" holds nested arrays`);
          const n = r.count(itemType === GgufValueType.STRING ? 8 : (SCALAR_SIZES[itemType as GgufValueType] ?? 1));
          const items: GgufScalar[] = new Array(n);
          for (let j = 0; j < n; j++) items[j] = readScalar(r, itemType, file);
          value = items;
        } else {
          value = readScalar(r, type, file);
        }
        if (metadata.has(key)) throw new ModelFileError(file, `refused: duplicate metadata key "${key}"`);
        metadata.set(key, value);
      }
      const alignment = metadata.get('general.alignment') ?? 32;
      if (typeof alignment !== 'number' || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
        throw new ModelFileError(file, `refused: general.alignment must be a power of two; got ${String(alignment)}`);
      }
      const raw: { name: string; dims: number[]; type: number; offset: bigint }[] = [];
      for (let i = 0; i < tensorCount; i++) {
        const name = r.str();
        const nDims = r.u32();
        if (nDims < 1 || nDims > MAX_DIMS)
          throw new ModelFileError(file, `refused: tensor "${name}" has ${nDims} dimensions (1 to ${MAX_DIMS} allowed)`);
        const dims: number[] = [];
        for (let d = 0; d < nDims; d++) {
          const v = r.u64();
          if (v === 0n || v > BigInt(Number.MAX_SAFE_INTEGER))
            throw new ModelFileError(file, `refused: tensor "${name}" has a dimension of ${v}`);
          dims.push(Number(v));
        }
        raw.push({ name, dims, type: r.u32(), offset: r.u64() });
      }
      const dataStart = Math.ceil(r.pos / alignment) * alignment;
      const seen = new Set<string>();
      const tensors: GgufTensorInfo[] = raw.map((t) => {
        if (seen.has(t.name)) throw new ModelFileError(file, `refused: duplicate tensor "${t.name}"`);
        seen.add(t.name);
        const traits = GGML_TYPE_SIZES[t.type];
        const elements = t.dims.reduce((a, b) => a * b, 1);
        let byteSize: number | null = null;
        if (traits) {
          if (t.dims[0]! % traits[0] !== 0) {
            throw new ModelFileError(
              file,
              `refused: tensor "${t.name}" has a first dimension of ${t.dims[0]}, not a multiple of its type's block size ${traits[0]}`,
            );
          }
          byteSize = (elements / traits[0]) * traits[1];
        }
        const fileOffset = dataStart + Number(t.offset);
        if (fileOffset + (byteSize ?? 0) > size) {
          throw new ModelFileError(
            file,
            `refused: the file is truncated (${size} bytes; tensor "${t.name}" ends at byte ${fileOffset + (byteSize ?? 0)})`,
          );
        }
        return { name: t.name, dims: t.dims, type: t.type, fileOffset, byteSize };
      });
      const architecture = metadata.get('general.architecture');
      if (typeof architecture !== 'string' || architecture.length === 0)
        throw new ModelFileError(file, 'refused: the GGUF has no "general.architecture"');
      return { file, version, fileSize: size, metadata, tensors, architecture };
    } catch (e) {
      if (e instanceof Truncated)
        throw new ModelFileError(
          file,
          `refused: the file is truncated or corrupt (its metadata runs past the end of the ${size}-byte file)`,
        );
      throw e;
    }
  } finally {
    closeSync(fd);
  }
}

/** Keys llama.cpp reads without a default for these architectures: a file without them aborts the process. */
const LLAMA_LIKE = new Set([
  'llama',
  'qwen2',
  'qwen3',
  'mistral',
  'gemma',
  'gemma2',
  'gemma3',
  'phi3',
  'granite',
  'olmo',
  'olmo2',
  'smollm3',
]);
const BERT_LIKE = new Set(['bert', 'nomic-bert', 'jina-bert-v2', 'modern-bert', 'neo-bert']);

function requiredKeys(arch: string): string[] {
  const base = [`${arch}.context_length`, `${arch}.embedding_length`, `${arch}.block_count`];
  if (LLAMA_LIKE.has(arch))
    return [...base, `${arch}.feed_forward_length`, `${arch}.attention.head_count`, `${arch}.attention.layer_norm_rms_epsilon`];
  if (BERT_LIKE.has(arch))
    return [...base, `${arch}.feed_forward_length`, `${arch}.attention.head_count`, `${arch}.attention.layer_norm_epsilon`];
  return [];
}

const SPECIAL_TOKEN_KEYS = [
  'bos_token_id',
  'eos_token_id',
  'eot_token_id',
  'eom_token_id',
  'unknown_token_id',
  'seperator_token_id',
  'padding_token_id',
  'mask_token_id',
  'cls_token_id',
];

function isPositiveInt(v: GgufMetadataValue | undefined): boolean {
  if (Array.isArray(v)) return v.length > 0 && v.every((x) => typeof x === 'number' && Number.isInteger(x) && x > 0);
  return typeof v === 'number' && Number.isInteger(v) && v > 0;
}

/** The facts a catalog is checked against. */
export interface GgufFacts {
  architecture: string;
  contextLength: number | null;
  embeddingLength: number | null;
  /** llama.cpp's pooling types: 0 none, 1 mean, 2 cls, 3 last, 4 rank. */
  poolingType: number | null;
  vocabularySize: number;
  hasChatTemplate: boolean;
  /** A classifier head (cls.output.weight or cls.weight): what llama.cpp's ranking needs. */
  hasClassifierHead: boolean;
}

/**
 * Reads the file and refuses, with a message naming the file and the problem, what would crash
 * llama.cpp or cannot be a model at all. Returns the facts a catalog entry is checked against.
 */
export function inspectGgufFile(file: string): { info: GgufFileInfo; facts: GgufFacts } {
  const info = readGgufFile(file);
  const { metadata: m, architecture: arch } = info;
  const refuse = (problem: string): never => {
    throw new ModelFileError(file, `refused: ${problem}`);
  };
  for (const key of requiredKeys(arch)) {
    if (!m.has(key))
      refuse(`the GGUF has no "${key}", which llama.cpp requires for the ${arch} architecture (loading it would abort the process)`);
    if (key.endsWith('epsilon')) {
      const eps = m.get(key);
      if (typeof eps !== 'number' || !(eps > 0)) refuse(`"${key}" must be a positive number; got ${JSON.stringify(String(eps))}`);
    } else if (!isPositiveInt(m.get(key))) {
      refuse(`"${key}" must be a positive integer; got ${JSON.stringify(String(m.get(key)))}`);
    }
  }
  const embd = m.get(`${arch}.embedding_length`);
  const heads = m.get(`${arch}.attention.head_count`);
  if (typeof embd === 'number' && typeof heads === 'number' && embd % heads !== 0 && !m.has(`${arch}.attention.key_length`)) {
    refuse(`"${arch}.embedding_length" (${embd}) is not a multiple of "${arch}.attention.head_count" (${heads})`);
  }
  const headsKv = m.get(`${arch}.attention.head_count_kv`);
  if (typeof heads === 'number' && typeof headsKv === 'number' && (headsKv <= 0 || heads % headsKv !== 0)) {
    refuse(`"${arch}.attention.head_count" (${heads}) is not a multiple of "${arch}.attention.head_count_kv" (${headsKv})`);
  }

  const tokenizerModel = m.get('tokenizer.ggml.model');
  let vocabularySize = 0;
  if (tokenizerModel !== undefined && tokenizerModel !== 'none' && tokenizerModel !== 'no_vocab') {
    const tokens = m.get('tokenizer.ggml.tokens');
    if (!Array.isArray(tokens) || tokens.length === 0) refuse('the GGUF has a tokenizer but no "tokenizer.ggml.tokens"');
    const list = tokens as GgufScalar[];
    vocabularySize = list.length;
    const firstIndex = new Map<string, number>();
    list.forEach((token, index) => {
      const text = String(token);
      const earlier = firstIndex.get(text);
      if (earlier !== undefined) {
        refuse(
          `the vocabulary has a duplicate token ${JSON.stringify(text)} (ids ${earlier} and ${index}); llama.cpp aborts the process on it`,
        );
      }
      firstIndex.set(text, index);
    });
    for (const key of ['tokenizer.ggml.token_type', 'tokenizer.ggml.scores']) {
      const v = m.get(key);
      if (v !== undefined && (!Array.isArray(v) || v.length !== list.length)) {
        refuse(`"${key}" has ${Array.isArray(v) ? v.length : 'no'} entries for ${list.length} tokens`);
      }
    }
    for (const name of SPECIAL_TOKEN_KEYS) {
      const v = m.get(`tokenizer.ggml.${name}`);
      if (v !== undefined && typeof v === 'number' && (v < -1 || v >= list.length)) {
        refuse(`"tokenizer.ggml.${name}" is ${v}, outside the vocabulary of ${list.length} tokens`);
      }
    }
    if (tokenizerModel === 'gpt2') {
      const merges = m.get('tokenizer.ggml.merges');
      if (!Array.isArray(merges)) refuse('a "gpt2" (byte-level BPE) tokenizer needs "tokenizer.ggml.merges"');
    }
  }

  if (LLAMA_LIKE.has(arch) || BERT_LIKE.has(arch)) {
    const embeddings = info.tensors.find((t) => t.name === 'token_embd.weight');
    if (!embeddings) refuse('the GGUF has no "token_embd.weight" tensor');
    if (vocabularySize > 0 && embeddings!.dims[1] !== vocabularySize) {
      refuse(`"token_embd.weight" has ${embeddings!.dims[1]} rows for a vocabulary of ${vocabularySize} tokens`);
    }
    if (typeof embd === 'number' && embeddings!.dims[0] !== embd) {
      refuse(`"token_embd.weight" is ${embeddings!.dims[0]} wide but "${arch}.embedding_length" is ${embd}`);
    }
  }

  const num = (key: string): number | null => {
    const v = m.get(key);
    return typeof v === 'number' ? v : null;
  };
  return {
    info,
    facts: {
      architecture: arch,
      contextLength: num(`${arch}.context_length`),
      embeddingLength: num(`${arch}.embedding_length`),
      poolingType: num(`${arch}.pooling_type`),
      vocabularySize,
      hasChatTemplate: typeof m.get('tokenizer.chat_template') === 'string',
      hasClassifierHead: info.tensors.some((t) => t.name === 'cls.output.weight' || t.name === 'cls.weight'),
    },
  };
}
