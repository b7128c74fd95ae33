// What a person reads when the server refuses a form: the server's own messages are written for
// people already, but for the fields' API names they use (named as the form calls them, or as the
// form's label reads), and GraphQL's refusals of a variable (`Variable "$input" got invalid value
// "abc" at "input.monthlyLimit"; Decimal: not a decimal number: "abc".`), which are turned into
// the field and what to type. A request that got no answer from GraphQL says whether the server
// could not be reached or failed.

const COERCION = /^Variable "\$(\w+)" got invalid value (.+?)(?: at "([\w.[\]]+)")?; (?:Decimal: )?(.+?)\.?$/s;

/** How a form calls its fields in sentences: { threshold: 'the balance to top up at' }. */
export type FieldNames = Record<string, string>;

const capitalise = (s: string) => (s ? s[0]!.toUpperCase() + s.slice(1) : s);

/** "input.monthlyLimit" → "monthly limit" (or the form's own name for it). */
function fieldName(path: string | undefined, names: FieldNames = {}): string {
  const last =
    path
      ?.split('.')
      .at(-1)
      ?.replace(/\[\d+\]$/, '') ?? '';
  if (names[last]) return names[last]!;
  return (
    last
      .replace(/([a-z])([A-Z])/g, '$1 $2')
      .replace(/_/g, ' ')
      .toLowerCase() || 'a value'
  );
}

/** A server message that opens with the field's API name: 'extraRecipients' must…, monthlyLimit must… */
const FIELD_FIRST = /^'?([a-z][A-Za-z_]*)'?(?= (?:must|is|has|cannot|\())/;
/** A field's API name quoted inside a message: …must be below 'amount' (25.00). */
const QUOTED_FIELD = /'([a-z][A-Za-z_]*)'/g;

export function errorText(message: string, names: FieldNames = {}): string {
  const m = COERCION.exec(message);
  if (!m) {
    return message
      .replace(FIELD_FIRST, (_all, field: string) => capitalise(fieldName(field, names)))
      .replace(QUOTED_FIELD, (_all, field: string) => fieldName(field, names));
  }
  const [, variable, given, path, reason] = m;
  const what = capitalise(fieldName(path ?? variable, names));
  if (given === '""') return `${what} is required: enter an amount such as 25 or 25.50.`;
  if (/not a decimal number|cannot represent|not a number/i.test(reason!)) {
    return `${what}: ${given} is not an amount. Enter a number such as 25 or 25.50, with a point for decimals.`;
  }
  if (/decimal places/i.test(reason!)) return `${what}: ${given} has too many decimal places.`;
  return `${what}: ${reason}.`;
}

/** The parts of urql's CombinedError this reads (a plain Error or a string is taken too). */
export interface FailedRequest {
  message: string;
  graphQLErrors?: readonly { message: string; extensions?: Record<string, unknown> }[];
  networkError?: Error;
  response?: { status?: number } | null;
}

/**
 * What went wrong with a request, in words: the server's own messages; a server that answered with
 * an error status and no GraphQL answer (a crash, a proxy's 502) as the server's failure; and only
 * a request that got no answer at all as the server out of reach.
 */
export function failureText(error: FailedRequest | string, names: FieldNames = {}): string {
  if (typeof error === 'string') return error;
  if (error.graphQLErrors && error.graphQLErrors.length > 0) return error.graphQLErrors.map((e) => errorText(e.message, names)).join(' ');
  if (error.networkError) {
    const status = typeof error.response?.status === 'number' ? error.response.status : 0;
    if (status >= 500) return `The server had an error (HTTP ${status}). Try again in a moment; if it goes on, tell the operator.`;
    if (status >= 400) return `The server refused the request (HTTP ${status}).`;
    return 'The server could not be reached. Check your connection and try again.';
  }
  return error.message;
}

/** The server's code for a refusal (`email_taken`, `invalid_token`), for a page to offer the way on. */
export function errorCode(error: FailedRequest | string | null | undefined): string | null {
  if (!error || typeof error === 'string') return null;
  const code = error.graphQLErrors?.map((e) => e.extensions?.code).find((c) => typeof c === 'string');
  return typeof code === 'string' ? code : null;
}
