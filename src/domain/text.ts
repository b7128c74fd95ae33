// What text a client sends may hold where it is stored or shown: the checks more than one field uses.

/** A UTF-16 surrogate without its pair: not text a database can store. */
export const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether the text holds a control character: one below a space (a NUL, a line break) or DEL; with `c1`, U+0080–U+009F too. */
export function hasControlCharacter(text: string, c1 = false): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || (c1 && c >= 0x80 && c <= 0x9f)) return true;
  }
  return false;
}
