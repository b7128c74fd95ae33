// GGUF's file-format constants, which the inspector reads (./gguf-inspect.ts) and the test-model
// writer writes (src/fixtures/gguf-writer.ts).

export const GGUF_MAGIC = 0x46554747; // "GGUF", little-endian
export const GGUF_VERSION = 3;

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
