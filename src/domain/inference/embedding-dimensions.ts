// Shorter embeddings (`dimensions`): a model trained Matryoshka-style keeps most of its quality in
// the first components of its vectors, so a client may ask for one of the sizes its catalog entry
// declares (`specifications.supported_dimensions`, or the full `output_dimensions`). The vectors
// are cut here, after either engine answered in full, and scaled back to unit length, so the
// result is the same whatever the upstream supports.
import type { EmbeddingModelConfig } from '../catalog/model.js';
import { DomainError } from '../errors.js';

/** The sizes a request may ask the model for, smallest first: its supported_dimensions and its full size. */
export function allowedDimensions(model: EmbeddingModelConfig): number[] {
  const { output_dimensions: full, supported_dimensions: declared = [] } = model.specifications;
  return [...new Set([...declared, full])].sort((a, b) => a - b);
}

/**
 * The size the vectors are cut to: `requested` when the model supports it, null for the full size
 * (nothing to cut). Any other value is refused with 400 naming `dimensions`.
 */
export function checkDimensions(model: EmbeddingModelConfig, requested: number | null | undefined): number | null {
  if (requested === null || requested === undefined) return null;
  const allowed = allowedDimensions(model);
  if (!Number.isInteger(requested) || !allowed.includes(requested)) {
    const why =
      allowed.length === 1
        ? `the model '${model.id}' returns ${allowed[0]} dimensions and declares no shorter sizes`
        : `the model '${model.id}' supports ${allowed.join(', ')}`;
    throw new DomainError('invalid_value', `'dimensions' = ${requested} is not supported: ${why}.`, { param: 'dimensions' });
  }
  return requested === model.specifications.output_dimensions ? null : requested;
}

/** The first `size` components of `vector`, scaled to unit L2 length (a zero vector stays zero). */
export function shorten(vector: number[], size: number): number[] {
  const cut = vector.slice(0, size);
  let sum = 0;
  for (const x of cut) sum += x * x;
  if (sum === 0) return cut;
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < cut.length; i++) cut[i] = cut[i]! * inv;
  return cut;
}
