// What a person reads when the server refuses a form: the server's own messages are written for
// people already, but for the field's API name they may open with (named as the form's label is),
// and GraphQL's refusals of a variable (`Variable "$input" got invalid value
// "abc" at "input.monthlyLimit"; Decimal: not a decimal number: "abc".`), which are turned into
// the field and what to type.

const COERCION = /^Variable "\$(\w+)" got invalid value (.+?)(?: at "([\w.[\]]+)")?; (?:Decimal: )?(.+?)\.?$/s;

/** "input.monthlyLimit" → "Monthly limit". */
function fieldName(path: string | undefined): string {
  const last =
    path
      ?.split('.')
      .at(-1)
      ?.replace(/\[\d+\]$/, '') ?? '';
  const words = last.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
  return words ? words[0]!.toUpperCase() + words.slice(1) : 'A value';
}

/** A server message that opens with the field's API name: 'extraRecipients' must…, monthlyLimit must… */
const FIELD_FIRST = /^'?([a-z][A-Za-z]*)'?(?= (?:must|is|has|cannot)\b)/;

export function errorText(message: string): string {
  const m = COERCION.exec(message);
  if (!m) return message.replace(FIELD_FIRST, (_all, field: string) => fieldName(field));
  const [, variable, given, path, reason] = m;
  const what = fieldName(path ?? variable);
  if (/not a decimal number|cannot represent|not a number/i.test(reason!)) {
    return `${what}: ${given} is not an amount. Enter a number such as 25 or 25.50, with a point for decimals.`;
  }
  if (/decimal places/i.test(reason!)) return `${what}: ${given} has too many decimal places.`;
  return `${what}: ${reason}.`;
}
