// Passwords: argon2id through @node-rs/argon2 (a maintained native binding), with the OWASP
// parameters (19 MiB, 2 passes, 1 lane). Only the encoded hash is stored; it carries its own
// salt and parameters, so they can be raised later without a migration.
import { hash, verify } from '@node-rs/argon2';
import { DomainError } from '../errors.js';

export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 200;

const OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

/** Refuses a password too short or too long (length is the rule NIST SP 800-63B asks for). */
export function validatePassword(password: unknown, param = 'password'): string {
  if (typeof password !== 'string' || [...password].length < MIN_PASSWORD_LENGTH) {
    throw new DomainError('invalid_value', `The password must have at least ${MIN_PASSWORD_LENGTH} characters.`, { param });
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw new DomainError('invalid_value', `The password must have at most ${MAX_PASSWORD_LENGTH} characters.`, { param });
  }
  return password;
}

export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

export async function verifyPassword(encoded: string | null | undefined, password: string): Promise<boolean> {
  if (!encoded) {
    // The same work as a real check, so that an unknown address takes as long as a wrong password.
    await hash(password, OPTIONS);
    return false;
  }
  try {
    return await verify(encoded, password);
  } catch {
    return false;
  }
}
