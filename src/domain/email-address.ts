// What tollgate takes as an e-mail address: one plain address (local@domain.tld), without the
// characters a mail header reads as a list, a display name, a route or a comment
// (`,;<>"()[]:\`). Nodemailer would read `me,victim@example.com` as two recipients: an account's
// mail (a password reset) would go elsewhere, and the address would pass for another account's.
const EMAIL_ADDRESS = /^[^\s@,;<>"()[\]:\\]+@[^\s@,;<>"()[\]:\\]+\.[^\s@,;<>"()[\]:\\]+$/;

export const MAX_EMAIL_LENGTH = 320;

export function isEmailAddress(text: string): boolean {
  return text.length > 0 && text.length <= MAX_EMAIL_LENGTH && EMAIL_ADDRESS.test(text);
}
