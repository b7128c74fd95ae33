// A client's JSON Schema as the grammar llama.cpp generates under. node-llama-cpp's
// createGrammarForJsonSchema reads a subset of JSON Schema and ignores the rest, so its answers
// could fail the very schema the client sent: a `minimum`, a `pattern` or an `allOf` ignored, a
// `$ref` to `#/definitions/…` or `#` read as "null or anything", and numbers written with
// exponents (`1E-5` for an integer, `1e99999` for a number that JSON.parse reads as Infinity).
// Here a schema is translated into that subset wherever the meaning is kept (anyOf, definitions, a
// recursive `#`, lists of types, tuple `items`, integer ranges as enums), a few common bounds get
// grammar rules of their own (integers ≥ 0 or ≥ 1; numbers ≥ 0, > 0, or from 0 to 1), numbers are
// written without exponents and with at most 15 digits before the point (so they stay within
// JavaScript's safe integers), and every other assertion is refused, naming the keyword and where
// it is, instead of being generated past.
import { randomBytes } from 'node:crypto';
import { DomainError } from '../../errors.js';

/** The schema for createGrammarForJsonSchema, and the GBNF of the rules its sentinels stand for. */
export interface GrammarSchema {
  schema: Record<string, unknown>;
  rules: Map<string, string>;
}

type Schema = Record<string, unknown>;

/** Assertions the grammar cannot hold an answer to: refused. */
const REFUSED = [
  'pattern',
  'patternProperties',
  'propertyNames',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  'not',
  'if',
  'then',
  'else',
  'uniqueItems',
  'contains',
  'minContains',
  'maxContains',
  'unevaluatedProperties',
  'unevaluatedItems',
  '$dynamicRef',
  '$recursiveRef',
] as const;

/**
 * The keywords this module reads. Any other is an annotation (title, description, default, $defs…)
 * or not JSON Schema's, and is ignored, as JSON Schema says.
 */
const ASSERTIONS = new Set([
  ...REFUSED,
  'type',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'allOf',
  '$ref',
  'properties',
  'required',
  'additionalProperties',
  'minProperties',
  'maxProperties',
  'items',
  'prefixItems',
  'additionalItems',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
]);

const FORMATS = new Set(['date', 'time', 'date-time']);
const OBJECT_KEYWORDS = ['properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties'];
const ARRAY_KEYWORDS = ['items', 'prefixItems', 'additionalItems', 'minItems', 'maxItems'];
const STRING_KEYWORDS = ['minLength', 'maxLength', 'format'];
const NUMBER_KEYWORDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'];

/** The largest magnitude the grammar's numbers reach: 15 digits before the point. */
const WIDE = 999_999_999_999_999;
/** Integer ranges up to this many values become an enum. */
const MAX_ENUM_RANGE = 1000;
/**
 * What one schema may hold: the grammar is built on the event loop, and its cost grows faster than
 * the schema (40,000 enum values held the process for half a minute). OpenAI's structured outputs
 * set limits of the same kind (1,000 enum values, 5,000 properties, 10 levels).
 */
export const SCHEMA_LIMITS = { values: 2000, properties: 5000, depth: 32, subschemas: 10_000, alternatives: 256 };
/** The most subschemas refuseAmbiguity looks at (definitions through cycles are looked at again). */
const MAX_AMBIGUITY_VISITS = 200_000;
/** The magnitude the grammar's numbers stay below: 15 digits before the point. */
const NUMBER_REACH = 1e15;

const DIGITS = '[1-9] [0-9]{0,14}';
const FRACTION = '("." [0-9]{1,15})?';
/** The grammar's own number rules, without exponents. */
const INTEGER_RULE = `"-"? ("0" | ${DIGITS})`;
const FRACTIONAL_RULE = `"-"? ("0" | ${DIGITS}) ${FRACTION}`;
const BOUND_RULES = {
  nonNegativeInteger: `"0" | ${DIGITS}`,
  positiveInteger: DIGITS,
  nonNegativeNumber: `("0" | ${DIGITS}) ${FRACTION}`,
  positiveNumber: `${DIGITS} ${FRACTION} | "0." [0-9]{0,14} [1-9]`,
  unitInterval: `"0" ${FRACTION} | "1" ("." "0"{1,15})?`,
};

const ROOT_DEF = 'tollgate-root';
// Per process and unguessable: no property name or enum value of a client's can be taken for one.
const SENTINEL = `tollgate-rule-${randomBytes(6).toString('hex')}-`;

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const isPrimitive = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);

function typeOfValue(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

const fitsType = (v: unknown, type: string) => {
  const t = typeOfValue(v);
  return t === type || (type === 'number' && t === 'integer');
};

class Translator {
  readonly rules = new Map<string, string>();
  private readonly defs = new Map<string, unknown>();
  private readonly translated = new Map<string, Schema>();
  private rootReferenced = false;
  private values = 0;
  private properties = 0;
  private subschemas = 0;

  constructor(private readonly param: string) {}

  run(root: unknown): GrammarSchema {
    this.collectDefs(root, this.param);
    const schema = this.translate(root, this.param);
    if (!this.rootReferenced && this.translated.size === 0) {
      this.refuseAmbiguity(schema, {});
      return { schema, rules: this.rules };
    }
    // Definitions (and the root itself, when something refers to `#`) sit at the root's scope.
    const $defs: Schema = Object.fromEntries(this.translated);
    $defs[ROOT_DEF] = schema;
    this.refuseLeftRecursion($defs as Record<string, Schema>);
    this.refuseAmbiguity(schema, $defs as Record<string, Schema>);
    return { schema: { $defs, $ref: `#/$defs/${ROOT_DEF}` }, rules: this.rules };
  }

  /**
   * The grammar follows every alternative (`anyOf`, `oneOf`) a value could still be, at every
   * token: alternatives inside alternatives (through `$ref`s too) multiply, and ten of them four
   * levels deep (10,000 ways to read the same text) held the model for seconds per token, far
   * beyond what any max_tokens bounds. Refused past SCHEMA_LIMITS.alternatives: how many ways the
   * schema lets one value be read at most, the alternatives of a union added, a union inside each
   * of them multiplying them (a definition that refers to itself counted once per path).
   */
  private refuseAmbiguity(root: Schema, defs: Record<string, Schema>): void {
    // A definition's count is kept only when no definition was cut short under it (a count taken
    // with a cycle open would be too low where that cycle is not).
    const known = new Map<string, number>();
    let cuts = 0;
    let visits = 0;
    const ways = (node: unknown, open: Set<string>): number => {
      if (++visits > MAX_AMBIGUITY_VISITS)
        this.refuse(this.param, '$ref', 'its definitions refer to one another in too many ways to weigh its alternatives');
      if (!isObject(node)) return 1;
      if (typeof node.$ref === 'string') {
        const name = node.$ref.slice('#/$defs/'.length);
        if (open.has(name)) {
          cuts++;
          return 1;
        }
        const found = known.get(name);
        if (found !== undefined) return found;
        const before = cuts;
        open.add(name);
        const n = ways(defs[name], open);
        open.delete(name);
        if (cuts === before) known.set(name, n);
        return n;
      }
      if (Array.isArray(node.oneOf)) return (node.oneOf as unknown[]).reduce<number>((sum, alt) => sum + ways(alt, open), 0);
      // A value's parts are read one after another: the most of any one of them.
      let most = 1;
      const part = (v: unknown) => {
        most = Math.max(most, ways(v, open));
      };
      if (isObject(node.properties)) for (const v of Object.values(node.properties)) part(v);
      if (isObject(node.additionalProperties)) part(node.additionalProperties);
      if (isObject(node.items)) part(node.items);
      if (Array.isArray(node.prefixItems)) for (const v of node.prefixItems) part(v);
      return most;
    };
    const n = ways(root, new Set([ROOT_DEF]));
    if (n > SCHEMA_LIMITS.alternatives)
      this.refuse(
        this.param,
        'anyOf',
        `its alternatives nested inside alternatives give ${n > 1e6 ? 'over a million' : n.toLocaleString('en-US')} ways to read one value (at most ${SCHEMA_LIMITS.alternatives} are taken), which the grammar would follow at every token`,
      );
  }

  /**
   * A definition that can lead back to itself before any value is written (`A: {$ref: A}`, or an
   * alternative of A that is A) has no finite value, and no grammar: refused.
   */
  private refuseLeftRecursion(defs: Record<string, Schema>): void {
    const heads = (schema: Schema): string[] => {
      if (typeof schema.$ref === 'string') return [schema.$ref.slice('#/$defs/'.length)];
      if (Array.isArray(schema.oneOf)) return (schema.oneOf as Schema[]).flatMap(heads);
      return [];
    };
    const reaches = (from: string, target: string, seen: Set<string>): boolean =>
      heads(defs[from] ?? {}).some((h) => h === target || (!seen.has(h) && (seen.add(h), reaches(h, target, seen))));
    for (const name of Object.keys(defs)) {
      if (reaches(name, name, new Set())) {
        this.refuse(this.param, '$ref', `${name === ROOT_DEF ? "'#'" : `'${name}'`} refers back to itself before any value is written`);
      }
    }
  }

  private refuse(path: string, keyword: string, why: string): never {
    throw new DomainError(
      'unsupported_parameter',
      `'${keyword}' at ${path} is not supported by in-process (llama.cpp) models, which generate under a grammar built from the schema: ${why}.`,
      { param: this.param },
    );
  }

  /**
   * `$defs` and `definitions` of every subschema, by name (a name defined twice differently is
   * refused). Only schema positions are walked: a property named `definitions`, or an example
   * holding a `$defs` key, is not a definition.
   */
  private collectDefs(node: unknown, path: string): void {
    // Its depth is bounded already: refuseDeepValues ran on the whole schema.
    if (!isObject(node)) return;
    const sub = (value: unknown, at: string) => this.collectDefs(value, at);
    for (const key of ['$defs', 'definitions']) {
      const defs = node[key];
      if (defs === undefined) continue;
      if (!isObject(defs)) this.refuse(path, key, 'it must be an object of schemas');
      for (const [name, def] of Object.entries(defs)) {
        const known = this.defs.get(name);
        if (known !== undefined && JSON.stringify(known) !== JSON.stringify(def))
          this.refuse(`${path}.${key}`, name, 'two definitions have this name');
        this.defs.set(name, def);
        sub(def, `${path}.${key}.${name}`);
      }
    }
    if (isObject(node.properties)) for (const [k, v] of Object.entries(node.properties)) sub(v, `${path}.properties.${k}`);
    for (const key of ['additionalProperties', 'additionalItems', 'items']) if (isObject(node[key])) sub(node[key], `${path}.${key}`);
    for (const key of ['items', 'prefixItems', 'anyOf', 'oneOf', 'allOf']) {
      const list = node[key];
      if (Array.isArray(list)) for (const [i, v] of list.entries()) sub(v, `${path}.${key}[${i}]`);
    }
  }

  private count(path: string, what: 'values' | 'properties', n: number): void {
    this[what] += n;
    const limit = SCHEMA_LIMITS[what];
    if (this[what] > limit)
      this.refuse(
        path,
        what === 'values' ? 'enum' : 'properties',
        `a schema may hold at most ${limit.toLocaleString('en-US')} ${what === 'values' ? 'enum and const values (integer ranges count each of theirs)' : 'properties'} in all`,
      );
  }

  private depth = 0;

  private translate(node: unknown, path: string): Schema {
    if (this.depth >= SCHEMA_LIMITS.depth) this.refuse(path, 'schema', `schemas may nest at most ${SCHEMA_LIMITS.depth} levels deep`);
    if (++this.subschemas > SCHEMA_LIMITS.subschemas)
      this.refuse(path, 'schema', `a schema may hold at most ${SCHEMA_LIMITS.subschemas.toLocaleString('en-US')} subschemas in all`);
    this.depth++;
    try {
      return this.translateNode(node, path);
    } finally {
      this.depth--;
    }
  }

  private translateNode(node: unknown, path: string): Schema {
    if (node === true) return {};
    if (!isObject(node)) {
      if (node === false) this.refuse(path, 'false', 'no value satisfies it');
      this.refuse(path, 'schema', 'a schema must be an object or a boolean');
    }
    for (const keyword of REFUSED) if (keyword in node) this.refuse(path, keyword, refusalReason(keyword));
    const assertions = Object.keys(node).filter((k) => ASSERTIONS.has(k));
    const alone = (keyword: string) => {
      const others = assertions.filter((k) => k !== keyword);
      if (others.length > 0) this.refuse(path, keyword, `it cannot be combined with '${others[0]}' in the same schema`);
    };

    if ('$ref' in node) {
      alone('$ref');
      return this.reference(node.$ref, path);
    }
    if ('allOf' in node) {
      alone('allOf');
      const all = node.allOf;
      if (!Array.isArray(all) || all.length !== 1) this.refuse(path, 'allOf', 'only an allOf of one schema can be generated');
      return this.translate(all[0], `${path}.allOf[0]`);
    }
    for (const keyword of ['anyOf', 'oneOf'] as const) {
      if (!(keyword in node)) continue;
      alone(keyword);
      const alternatives = node[keyword];
      if (!Array.isArray(alternatives) || alternatives.length === 0) this.refuse(path, keyword, 'it must be a non-empty list of schemas');
      return { oneOf: alternatives.map((a, i) => this.translate(a, `${path}.${keyword}[${i}]`)) };
    }

    const types = this.typesOf(node, path);
    if ('const' in node || 'enum' in node) return this.literals(node, types, path);
    if (types.length === 0) return {};
    if (types.length === 1) return this.single(node, types[0]!, path);
    return { oneOf: types.map((t) => this.single(node, t, path)) };
  }

  private reference(ref: unknown, path: string): Schema {
    if (ref === '#') {
      this.rootReferenced = true;
      return { $ref: `#/$defs/${ROOT_DEF}` };
    }
    const match = typeof ref === 'string' ? /^#\/(?:\$defs|definitions)\/([^/]+)$/.exec(ref) : null;
    if (!match)
      this.refuse(path, '$ref', `only '#' and '#/$defs/<name>' (or '#/definitions/<name>') can be followed, not ${JSON.stringify(ref)}`);
    const name = match[1]!.replaceAll('~1', '/').replaceAll('~0', '~');
    if (!this.defs.has(name)) this.refuse(path, '$ref', `${JSON.stringify(ref)} names no definition`);
    if (name === ROOT_DEF || name.startsWith(SENTINEL)) this.refuse(path, '$ref', `the definition name '${name}' is reserved`);
    if (!this.translated.has(name)) {
      this.translated.set(name, {}); // a recursive reference finds the name taken
      this.translated.set(name, this.translate(this.defs.get(name), `${path} (${name})`));
    }
    return { $ref: `#/$defs/${name}` };
  }

  private typesOf(node: Schema, path: string): string[] {
    const type = node.type;
    if (type !== undefined) {
      const list = Array.isArray(type) ? type : [type];
      for (const t of list)
        if (!['null', 'boolean', 'string', 'integer', 'number', 'object', 'array'].includes(t as string))
          this.refuse(path, 'type', `${JSON.stringify(t)} is not a JSON Schema type`);
      return [...new Set(list as string[])];
    }
    // No type: the keywords given say which values they constrain.
    const has = (keys: string[]) => keys.some((k) => k in node);
    const inferred: string[] = [];
    if (has(OBJECT_KEYWORDS)) inferred.push('object');
    if (has(ARRAY_KEYWORDS)) inferred.push('array');
    if (has(STRING_KEYWORDS)) inferred.push('string');
    if (has(NUMBER_KEYWORDS)) inferred.push('number');
    return inferred;
  }

  private literals(node: Schema, types: string[], path: string): Schema {
    const keyword = 'const' in node ? 'const' : 'enum';
    const values = keyword === 'const' ? [node.const] : node.enum;
    if (!Array.isArray(values) || values.length === 0) this.refuse(path, 'enum', 'it must be a non-empty list');
    if (!values.every(isPrimitive)) this.refuse(path, keyword, 'only strings, numbers, booleans and null can be generated as fixed values');
    const kept = types.length === 0 ? values : values.filter((v) => types.some((t) => fitsType(v, t)));
    if (kept.length === 0) this.refuse(path, keyword, `no value of it is of type ${types.join(' or ')}`);
    this.count(path, 'values', kept.length);
    if (kept.some((v) => typeof v === 'string' && v.startsWith(SENTINEL)))
      this.refuse(path, keyword, `values starting with '${SENTINEL}' are reserved`);
    return { enum: kept };
  }

  private single(node: Schema, type: string, path: string): Schema {
    switch (type) {
      case 'null':
      case 'boolean':
        return { type };
      case 'string':
        return this.string(node, path);
      case 'integer':
      case 'number':
        return this.number(node, type, path);
      case 'object':
        return this.object(node, path);
      default:
        return this.array(node, path);
    }
  }

  private string(node: Schema, path: string): Schema {
    const format = node.format;
    if (format !== undefined) {
      if (typeof format !== 'string' || !FORMATS.has(format))
        this.refuse(path, 'format', `the formats that can be generated are ${[...FORMATS].join(', ')}, not ${JSON.stringify(format)}`);
      if ('minLength' in node || 'maxLength' in node) this.refuse(path, 'format', 'it cannot be combined with minLength or maxLength');
      return { type: 'string', format };
    }
    const out: Schema = { type: 'string' };
    for (const k of ['minLength', 'maxLength']) {
      if (!(k in node)) continue;
      const n = node[k];
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) this.refuse(path, k, 'it must be a whole number, 0 or more');
      out[k] = n;
    }
    return out;
  }

  private number(node: Schema, type: 'integer' | 'number', path: string): Schema {
    const num = (k: string) => {
      const v = node[k];
      if (v === undefined || typeof v === 'boolean') return undefined;
      if (typeof v !== 'number' || !Number.isFinite(v)) this.refuse(path, k, 'it must be a number');
      return v;
    };
    // Draft 4 wrote exclusive bounds as booleans beside minimum and maximum.
    const exclusiveLow = node.exclusiveMinimum === true ? num('minimum') : num('exclusiveMinimum');
    const low = node.exclusiveMinimum === true ? undefined : num('minimum');
    const exclusiveHigh = node.exclusiveMaximum === true ? num('maximum') : num('exclusiveMaximum');
    const high = node.exclusiveMaximum === true ? undefined : num('maximum');
    const multipleOf = num('multipleOf');
    const bounded = NUMBER_KEYWORDS.find((k) => k !== 'multipleOf' && node[k] !== undefined) ?? 'multipleOf';
    const cannot = (): never =>
      this.refuse(
        path,
        bounded,
        type === 'integer'
          ? `the integer bounds that can be generated are ranges of at most ${MAX_ENUM_RANGE.toLocaleString('en-US')} values, a minimum of 0 or 1, and none (for bounds beyond ±${WIDE})`
          : 'the number bounds that can be generated are a minimum of 0, an exclusiveMinimum of 0, 0 to 1, and none (for bounds beyond ±999999999999999)',
      );

    if (type === 'integer') {
      let lo = Number.NEGATIVE_INFINITY;
      let hi = Number.POSITIVE_INFINITY;
      if (low !== undefined) lo = Math.max(lo, Math.ceil(low));
      if (exclusiveLow !== undefined) lo = Math.max(lo, Math.floor(exclusiveLow) + 1);
      if (high !== undefined) hi = Math.min(hi, Math.floor(high));
      if (exclusiveHigh !== undefined) hi = Math.min(hi, Math.ceil(exclusiveHigh) - 1);
      if (lo > hi) this.refuse(path, bounded, 'no integer lies within its bounds');
      const step = multipleOf ?? 1;
      if (step <= 0) this.refuse(path, 'multipleOf', 'it must be greater than 0');
      if (Number.isFinite(lo) && Number.isFinite(hi) && hi - lo < MAX_ENUM_RANGE) {
        const values: number[] = [];
        for (let v = lo; v <= hi; v++) if (Number.isInteger(v / step)) values.push(v);
        if (values.length === 0) this.refuse(path, 'multipleOf', 'no integer within the bounds is a multiple of it');
        this.count(path, 'values', values.length);
        return { enum: values };
      }
      if (!Number.isInteger(step) || (step !== 1 && multipleOf !== undefined))
        this.refuse(
          path,
          'multipleOf',
          `only integers in a range of at most ${MAX_ENUM_RANGE.toLocaleString('en-US')} values can be held to it`,
        );
      if (hi < WIDE) cannot();
      if (lo <= -WIDE) return { type: 'integer' };
      if (lo === 0) return this.rule(BOUND_RULES.nonNegativeInteger);
      if (lo === 1) return this.rule(BOUND_RULES.positiveInteger);
      return cannot();
    }

    if (multipleOf !== undefined) this.refuse(path, 'multipleOf', 'only integers can be held to it');
    // The grammar's numbers stay strictly between -1e15 and 1e15.
    const wideHigh = Math.min(high ?? Number.POSITIVE_INFINITY, exclusiveHigh ?? Number.POSITIVE_INFINITY) >= NUMBER_REACH;
    const wideLow = Math.max(low ?? Number.NEGATIVE_INFINITY, exclusiveLow ?? Number.NEGATIVE_INFINITY) <= -NUMBER_REACH;
    if (wideLow && wideHigh) return { type: 'number' };
    if (wideHigh && low === 0 && exclusiveLow === undefined) return this.rule(BOUND_RULES.nonNegativeNumber);
    if (wideHigh && exclusiveLow === 0 && (low === undefined || low <= 0)) return this.rule(BOUND_RULES.positiveNumber);
    if (low === 0 && high === 1 && exclusiveLow === undefined && exclusiveHigh === undefined) return this.rule(BOUND_RULES.unitInterval);
    return cannot();
  }

  /** A value generated by a rule of this module's: a sentinel constant the grammar's text swaps for it. */
  private rule(gbnf: string): Schema {
    for (const [name, body] of this.rules) if (body === gbnf) return { const: name };
    const name = `${SENTINEL}${this.rules.size}`;
    this.rules.set(name, gbnf);
    return { const: name };
  }

  private object(node: Schema, path: string): Schema {
    const out: Schema = { type: 'object' };
    const properties = node.properties ?? {};
    if (!isObject(properties)) this.refuse(path, 'properties', 'it must be an object of schemas');
    this.count(path, 'properties', Object.keys(properties).length);
    out.properties = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, this.translate(v, `${path}.properties.${k}`)]));
    const extra = node.additionalProperties;
    if (extra !== undefined && extra !== false)
      out.additionalProperties = extra === true ? true : this.translate(extra, `${path}.additionalProperties`);
    // Every property is generated (node-llama-cpp writes them all), so any `required` among them holds.
    const required = node.required ?? [];
    if (!Array.isArray(required)) this.refuse(path, 'required', 'it must be a list of names');
    for (const name of required)
      if (!(typeof name === 'string' && Object.hasOwn(properties, name)))
        this.refuse(path, 'required', `${JSON.stringify(name)} is not among the schema's properties`);
    // node-llama-cpp writes every property listed, then extra ones only where additionalProperties allows.
    const listed = Object.keys(properties).length;
    const min = node.minProperties;
    const max = node.maxProperties;
    if (max !== undefined && (typeof max !== 'number' || max < listed))
      this.refuse(path, 'maxProperties', `every one of the ${listed} properties is written, so at most ${String(max)} cannot hold`);
    if (min !== undefined && (typeof min !== 'number' || (min > listed && out.additionalProperties === undefined)))
      this.refuse(path, 'minProperties', `only the ${listed} properties are written (additionalProperties does not allow more)`);
    if (out.additionalProperties !== undefined) {
      if (min !== undefined) out.minProperties = min;
      if (max !== undefined) out.maxProperties = max;
    }
    return out;
  }

  private array(node: Schema, path: string): Schema {
    const out: Schema = { type: 'array' };
    let prefix = node.prefixItems;
    let items = node.items;
    // Draft 4's tuples: a list of item schemas, then additionalItems.
    if (Array.isArray(items)) {
      if (prefix !== undefined) this.refuse(path, 'items', 'a list of items cannot be combined with prefixItems');
      prefix = items;
      items = node.additionalItems;
    } else if ('additionalItems' in node) this.refuse(path, 'additionalItems', 'it only applies beside a list of items');
    if (prefix !== undefined) {
      if (!Array.isArray(prefix)) this.refuse(path, 'prefixItems', 'it must be a list of schemas');
      out.prefixItems = prefix.map((p, i) => this.translate(p, `${path}.prefixItems[${i}]`));
    }
    if (items === false) out.maxItems = Array.isArray(prefix) ? prefix.length : 0;
    else if (items !== undefined && items !== true) out.items = this.translate(items, `${path}.items`);
    for (const k of ['minItems', 'maxItems']) {
      if (!(k in node)) continue;
      const n = node[k];
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) this.refuse(path, k, 'it must be a whole number, 0 or more');
      out[k] = k === 'maxItems' && typeof out.maxItems === 'number' ? Math.min(out.maxItems, n) : n;
    }
    return out;
  }
}

function refusalReason(keyword: (typeof REFUSED)[number]): string {
  if (keyword === 'pattern' || keyword === 'patternProperties' || keyword === 'propertyNames')
    return 'regular expressions are not turned into grammars';
  if (keyword === 'uniqueItems') return 'the grammar cannot keep items apart';
  return 'the grammar cannot hold an answer to it';
}

/** The schema node-llama-cpp builds the grammar from; refuses what it cannot hold, naming it. */
export function grammarSchema(schema: unknown, param: string): GrammarSchema {
  refuseDeepValues(schema, param);
  return new Translator(param).run(schema ?? { type: 'object' });
}

/**
 * Refuses a schema nested deeper than any grammar needs, annotations included (an `examples`
 * value 10,000 arrays deep would overflow the stack of whatever reads it recursively), without
 * recursing itself.
 */
function refuseDeepValues(value: unknown, param: string): void {
  const limit = 4 * SCHEMA_LIMITS.depth;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > limit) {
      throw new DomainError(
        'unsupported_parameter',
        `'schema' at ${param} is not supported by in-process (llama.cpp) models: schemas may nest at most ${SCHEMA_LIMITS.depth} levels deep (values inside them at most ${limit}).`,
        { param },
      );
    }
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
}

/**
 * node-llama-cpp's grammar text, with numbers written without exponents and each sentinel constant
 * replaced by the rule it stands for.
 */
export function patchGrammar(text: string, rules: Map<string, string>): string {
  let out = text
    .replace(/^integer-number-rule ::= .*$/m, `integer-number-rule ::= ${INTEGER_RULE}`)
    .replace(/^fractional-number-rule ::= .*$/m, `fractional-number-rule ::= ${FRACTIONAL_RULE}`);
  for (const [name, body] of rules) {
    out = out.replaceAll(`"\\"${name}\\""`, name);
    out += `\n${name} ::= ${body}`;
  }
  // Should node-llama-cpp rename its number rules, say so rather than let exponents through.
  if (/\[eE\]/.test(out)) throw new Error("node-llama-cpp's number rules were not found: numbers could be written with exponents");
  return out;
}
