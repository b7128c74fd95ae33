// A small GGUF v3 writer: typed key/values (arrays included), tensor infos in ggml dimension order and
// 32-byte-aligned F32 data. It exists so that the project can make its own tiny test models
// (./fixtures.ts) where no weights can be downloaded; it is not a converter for real models.

export const GGUF_MAGIC = 0x46554747; // "GGUF", little-endian
export const GGUF_VERSION = 3;
const ALIGNMENT = 32;

/** GGUF value types (gguf.h). */
export enum GgufValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

type Scalar = { type: Exclude<GgufValueType, GgufValueType.ARRAY>; value: number | bigint | boolean | string };
export type GgufValue = Scalar | { type: GgufValueType.ARRAY; itemType: Exclude<GgufValueType, GgufValueType.ARRAY>; items: (number | bigint | boolean | string)[] };

export interface GgufTensor {
  name: string;
  /** ggml order: ne[0] (the contiguous, input dimension) first. */
  dims: number[];
  data: Float32Array;
}

export interface GgufSpec {
  /** In file order; a key may appear once. */
  metadata: [key: string, value: GgufValue][];
  tensors: GgufTensor[];
}

export const gguf = {
  u32: (value: number): GgufValue => ({ type: GgufValueType.UINT32, value }),
  i32: (value: number): GgufValue => ({ type: GgufValueType.INT32, value }),
  f32: (value: number): GgufValue => ({ type: GgufValueType.FLOAT32, value }),
  bool: (value: boolean): GgufValue => ({ type: GgufValueType.BOOL, value }),
  str: (value: string): GgufValue => ({ type: GgufValueType.STRING, value }),
  strings: (items: string[]): GgufValue => ({ type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, items }),
  f32s: (items: number[]): GgufValue => ({ type: GgufValueType.ARRAY, itemType: GgufValueType.FLOAT32, items }),
  i32s: (items: number[]): GgufValue => ({ type: GgufValueType.ARRAY, itemType: GgufValueType.INT32, items }),
};

/** Grows as it is written; little-endian throughout, as GGUF is. */
class ByteSink {
  private buf = Buffer.alloc(64 * 1024);
  length = 0;

  private reserve(n: number) {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = Buffer.alloc(size);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }

  u8(v: number) {
    this.reserve(1);
    this.buf.writeUInt8(v, this.length);
    this.length += 1;
  }
  i8(v: number) {
    this.reserve(1);
    this.buf.writeInt8(v, this.length);
    this.length += 1;
  }
  u16(v: number) {
    this.reserve(2);
    this.buf.writeUInt16LE(v, this.length);
    this.length += 2;
  }
  i16(v: number) {
    this.reserve(2);
    this.buf.writeInt16LE(v, this.length);
    this.length += 2;
  }
  u32(v: number) {
    this.reserve(4);
    this.buf.writeUInt32LE(v, this.length);
    this.length += 4;
  }
  i32(v: number) {
    this.reserve(4);
    this.buf.writeInt32LE(v, this.length);
    this.length += 4;
  }
  f32(v: number) {
    this.reserve(4);
    this.buf.writeFloatLE(v, this.length);
    this.length += 4;
  }
  f64(v: number) {
    this.reserve(8);
    this.buf.writeDoubleLE(v, this.length);
    this.length += 8;
  }
  u64(v: number | bigint) {
    this.reserve(8);
    this.buf.writeBigUInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  i64(v: number | bigint) {
    this.reserve(8);
    this.buf.writeBigInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  bytes(b: Uint8Array) {
    this.reserve(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  str(s: string) {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.bytes(b);
  }
  padTo(alignment: number) {
    const pad = (alignment - (this.length % alignment)) % alignment;
    this.reserve(pad);
    this.buf.fill(0, this.length, this.length + pad);
    this.length += pad;
  }
  toBuffer(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function writeScalar(out: ByteSink, type: GgufValueType, value: number | bigint | boolean | string) {
  switch (type) {
    case GgufValueType.UINT8:
      return out.u8(Number(value));
    case GgufValueType.INT8:
      return out.i8(Number(value));
    case GgufValueType.UINT16:
      return out.u16(Number(value));
    case GgufValueType.INT16:
      return out.i16(Number(value));
    case GgufValueType.UINT32:
      return out.u32(Number(value));
    case GgufValueType.INT32:
      return out.i32(Number(value));
    case GgufValueType.FLOAT32:
      return out.f32(Number(value));
    case GgufValueType.BOOL:
      return out.u8(value ? 1 : 0);
    case GgufValueType.STRING:
      return out.str(String(value));
    case GgufValueType.UINT64:
      return out.u64(typeof value === 'bigint' ? value : Number(value));
    case GgufValueType.INT64:
      return out.i64(typeof value === 'bigint' ? value : Number(value));
    case GgufValueType.FLOAT64:
      return out.f64(Number(value));
    default:
      throw new Error(`GGUF writer: unsupported value type ${type}`);
  }
}

/** Serialises a model: header, key/values, tensor infos, then the aligned F32 tensor data. */
export function writeGguf(spec: GgufSpec): Buffer {
  const out = new ByteSink();
  out.u32(GGUF_MAGIC);
  out.u32(GGUF_VERSION);
  out.u64(spec.tensors.length);
  out.u64(spec.metadata.length);
  for (const [key, value] of spec.metadata) {
    out.str(key);
    out.u32(value.type);
    if (value.type === GgufValueType.ARRAY) {
      out.u32(value.itemType);
      out.u64(value.items.length);
      for (const item of value.items) writeScalar(out, value.itemType, item);
    } else {
      writeScalar(out, value.type, value.value);
    }
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of spec.tensors) {
    const elements = t.dims.reduce((a, b) => a * b, 1);
    if (elements !== t.data.length) throw new Error(`GGUF writer: tensor ${t.name} has ${t.data.length} values for dims [${t.dims.join(', ')}]`);
    out.str(t.name);
    out.u32(t.dims.length);
    for (const d of t.dims) out.u64(d);
    out.u32(0); // GGML_TYPE_F32
    out.u64(offset);
    offsets.push(offset);
    offset += Math.ceil((elements * 4) / ALIGNMENT) * ALIGNMENT;
  }
  out.padTo(ALIGNMENT);
  const dataStart = out.length;
  spec.tensors.forEach((t, i) => {
    while (out.length < dataStart + offsets[i]!) out.u8(0);
    out.bytes(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  });
  out.padTo(ALIGNMENT);
  return out.toBuffer();
}
