// What tollgate takes as an e-mail address: one plain address (local@domain.tld), without the
// characters a mail header reads as a list, a display name, a route or a comment
// (`,;<>"()[]:\`). Nodemailer would read `me,victim@example.com` as two recipients: an account's
// mail (a password reset) would go elsewhere, and the address would pass for another account's.
//
// Printable ASCII only: control characters (a NUL cut SQLite's statement short: a 500) and
// letters outside ASCII, whose case SQLite's lower() does not fold (É@x.com could sign up but
// never sign in, and é@x.com sign up beside it). An internationalized domain is written in its
// xn-- form; a local part outside ASCII needs SMTPUTF8, which many mail servers lack.
import { hasControlCharacter } from './text.js';

const EMAIL_ADDRESS = /^[^\s@,;<>"()[\]:\\]+@[^\s@,;<>"()[\]:\\]+\.[^\s@,;<>"()[\]:\\]+$/;
const PRINTABLE_ASCII = /^[\x21-\x7e]+$/;

export const MAX_EMAIL_LENGTH = 320;

/** What a refused address is told, wherever one is taken. */
export const EMAIL_ADDRESS_RULE = 'an e-mail address such as name@example.com, in ASCII (a domain outside ASCII in its xn-- form)';

export function isEmailAddress(text: string): boolean {
  return text.length > 0 && text.length <= MAX_EMAIL_LENGTH && PRINTABLE_ASCII.test(text) && EMAIL_ADDRESS.test(text);
}

/**
 * An address taken before addresses had to be ASCII: looked up (a password reset) or kept (an
 * alert recipient already set) as it was, though no new one is taken. Control characters never.
 */
export function isKnownEmailAddress(text: string): boolean {
  return text.length > 0 && text.length <= MAX_EMAIL_LENGTH && !hasControlCharacter(text) && EMAIL_ADDRESS.test(text);
}
