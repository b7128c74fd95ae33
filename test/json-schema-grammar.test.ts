// A client's JSON Schema as llama.cpp's grammar (src/domain/inference/llamacpp/json-schema-grammar.ts):
// what is translated, and what is refused with the keyword and its place named. The answers
// generated under these grammars are checked on the fixture model in llamacpp-chat-features.test.ts.
import { describe, expect, it } from 'vitest';
import { DomainError } from '../src/domain/errors.js';
import { grammarSchema, patchGrammar, SCHEMA_LIMITS } from '../src/domain/inference/llamacpp/json-schema-grammar.js';

const P = 'response_format.json_schema.schema';

function refusal(schema: unknown): DomainError {
  try {
    grammarSchema(schema, P);
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return e as DomainError;
  }
  throw new Error(`not refused: ${JSON.stringify(schema)}`);
}

describe('a JSON Schema as a grammar', () => {
  it.each([
    [{ type: 'string', pattern: '^[0-9]{3}$' }, 'pattern', P],
    [{ type: 'object', properties: { n: { type: 'number', minimum: 5, maximum: 10 } } }, 'minimum', `${P}.properties.n`],
    [{ type: 'integer', minimum: 2 }, 'minimum', P],
    [{ type: 'integer', maximum: 7 }, 'maximum', P],
    [{ type: 'string', format: 'email' }, 'format', P],
    [{ allOf: [{ type: 'string' }, { type: 'string', maxLength: 3 }] }, 'allOf', P],
    [{ type: 'array', items: { type: 'string' }, uniqueItems: true }, 'uniqueItems', P],
    [{ $ref: 'https://example.com/pet.json' }, '$ref', P],
    [{ $ref: '#/$defs/missing' }, '$ref', P],
    [{ type: 'object', properties: { a: { type: 'string' } }, required: ['b'] }, 'required', P],
    [{ type: 'number', multipleOf: 0.5 }, 'multipleOf', P],
    [{ type: 'string', enum: [1, 2] }, 'enum', P],
    [{ const: { a: 1 } }, 'const', P],
    [{ not: { type: 'null' } }, 'not', P],
    [{ type: 'integer', minimum: 5, maximum: 4 }, 'minimum', P],
    // Every listed property is written: a maximum below their number, or a minimum above it with no extras allowed.
    [{ type: 'object', properties: { a: { type: 'null' }, b: { type: 'null' } }, maxProperties: 1 }, 'maxProperties', P],
    [{ type: 'object', properties: { a: { type: 'null' } }, minProperties: 3 }, 'minProperties', P],
    // Numbers reach up to 999999999999999.9…: a maximum of 999999999999999 is a bound they could pass.
    [{ type: 'number', maximum: 999999999999999 }, 'maximum', P],
    // A definition that leads back to itself before any value: no grammar has it.
    [{ $defs: { a: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }, '$ref', P],
    [{ $ref: '#' }, '$ref', P],
    [{ $defs: { a: { anyOf: [{ $ref: '#/$defs/b' }, { type: 'null' }] }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }, '$ref', P],
  ])('refuses %j naming %s at %s', (schema, keyword, path) => {
    const e = refusal(schema);
    expect(e.code).toBe('unsupported_parameter');
    expect(e.param).toBe(P);
    expect(e.message).toContain(`'${keyword}' at ${path} `);
  });

  it('refuses alternatives nested in alternatives past SCHEMA_LIMITS.alternatives ways to read a value (the grammar follows each at every token)', () => {
    // Each level a union of `width` arrays holding the level below: width^depth ways to read one value.
    const levels = (depth: number, width: number) => {
      const $defs: Record<string, unknown> = { L0: { type: 'string', minLength: 4, maxLength: 6 } };
      for (let d = 1; d <= depth; d++)
        $defs[`L${d}`] = {
          anyOf: Array.from({ length: width }, (_, i) => ({
            type: 'array',
            prefixItems: [{ $ref: `#/$defs/L${d - 1}` }, { const: i }],
            minItems: 2,
            maxItems: 2,
          })),
        };
      return { $defs, $ref: `#/$defs/L${depth}` };
    };
    const refused = refusal(levels(4, 10));
    expect(refused.code).toBe('unsupported_parameter');
    expect(refused.message).toContain(`'anyOf' at ${P} `);
    expect(refused.message).toContain('10,000 ways to read one value (at most 256 are taken)');
    expect(refusal(levels(3, 7)).message).toContain('343 ways');
    // 16 × 16 = 256: taken, as are unions side by side (their ways do not multiply).
    expect(grammarSchema(levels(2, 16), P).schema).toBeDefined();
    const union = { anyOf: Array.from({ length: 200 }, (_, i) => ({ type: 'object', properties: { kind: { const: `k${i}` } } })) };
    expect(
      grammarSchema({ type: 'object', properties: { a: union, b: union, c: { type: 'array', items: union } } }, P).schema,
    ).toBeDefined();
    // A definition that refers to itself (a tree) counts once on each path, not without end.
    const tree = {
      $defs: {
        node: {
          anyOf: [{ type: 'string' }, { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/$defs/node' } } } }],
        },
      },
      $ref: '#/$defs/node',
    };
    expect(grammarSchema(tree, P).schema).toBeDefined();
    // Two definitions that refer to each other: A (100 alternatives) counted under B, with B's cycle
    // cut short, must not be taken for what A gives on its own (100 × B's 4 = 400).
    const each = (ref: string, width: number, orText: boolean) => ({
      anyOf: Array.from({ length: width }, (_, i) => ({
        type: 'array',
        prefixItems: [orText ? { anyOf: [{ $ref: ref }, { type: 'string' }] } : { $ref: ref }, { const: i }],
        minItems: 2,
        maxItems: 2,
      })),
    });
    const mutual = {
      $defs: { A: each('#/$defs/B', 100, false), B: each('#/$defs/A', 2, true) },
      type: 'object',
      properties: { x: { $ref: '#/$defs/B' }, y: { $ref: '#/$defs/A' } },
    };
    expect(refusal(mutual).message).toContain('400 ways');
  });

  it('refuses a schema too large to build a grammar from on the event loop: values, properties, depth', () => {
    const values = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`);
    expect(refusal({ enum: values(40_000) }).message).toContain(
      `at most ${SCHEMA_LIMITS.values.toLocaleString('en-US')} enum and const values`,
    );
    // In all, not per enum; integer ranges count each of their values.
    const split = { type: 'object', properties: { a: { enum: values(1500) }, b: { type: 'integer', minimum: 0, maximum: 600 } } };
    expect(refusal(split).message).toContain(`'enum' at ${P}.properties.b `);
    expect(grammarSchema({ type: 'object', properties: { a: { enum: values(SCHEMA_LIMITS.values) } } }, P).schema).toBeDefined();
    const wide = {
      type: 'object',
      properties: Object.fromEntries(values(SCHEMA_LIMITS.properties + 1).map((v) => [v, { type: 'boolean' }])),
    };
    expect(refusal(wide).message).toContain(`'properties' at ${P} `);
    let deep: Record<string, unknown> = { type: 'boolean' };
    for (let i = 0; i < SCHEMA_LIMITS.depth; i++) deep = { type: 'object', properties: { a: deep } };
    expect(refusal(deep).message).toContain(`nest at most ${SCHEMA_LIMITS.depth} levels`);
    // A deeply nested value elsewhere in the schema (an enum's values are not schemas, but are read).
    let nested: unknown = 1;
    for (let i = 0; i < 10_000; i++) nested = [nested];
    expect(refusal({ type: 'object', properties: {}, examples: [nested] }).message).toContain('nest at most');
  });

  it('reads definitions only where schemas are: a property named like a keyword is a property', () => {
    const { schema } = grammarSchema(
      {
        type: 'object',
        properties: { definitions: { type: 'boolean' }, $defs: { type: 'null' }, 'tollgate-rule-0': { type: 'boolean' } },
        examples: [{ $defs: 3 }],
      },
      P,
    );
    expect(Object.keys(schema.properties as object)).toEqual(['definitions', '$defs', 'tollgate-rule-0']);
    // Recursion through a value that writes something first ("[") is fine.
    expect(grammarSchema({ type: 'array', items: { $ref: '#' }, maxItems: 2 }, P).schema.$ref).toBe('#/$defs/tollgate-root');
    expect(refusal({ anyOf: Array.from({ length: 10_001 }, () => ({ type: 'null' })) }).message).toContain('at most 10,000 subschemas');
    const fine = grammarSchema({ type: 'object', properties: { a: { type: 'null' } }, additionalProperties: true, minProperties: 3 }, P);
    expect(fine.schema).toMatchObject({ minProperties: 3, additionalProperties: true });
  });

  it('turns anyOf into alternatives, draft 4 definitions into $defs, and a recursive # into a definition', () => {
    const { schema } = grammarSchema(
      {
        definitions: { pet: { type: 'object', properties: { kind: { enum: ['cat', 'dog'] } }, required: ['kind'] } },
        type: 'object',
        properties: {
          pet: { $ref: '#/definitions/pet' },
          tag: { anyOf: [{ type: 'string', maxLength: 4 }, { type: 'null' }] },
          kids: { type: 'array', items: { $ref: '#' }, maxItems: 2 },
        },
      },
      P,
    );
    expect(schema.$ref).toBe('#/$defs/tollgate-root');
    const defs = schema.$defs as Record<string, any>;
    expect(defs.pet).toEqual({ type: 'object', properties: { kind: { enum: ['cat', 'dog'] } } });
    const root = defs['tollgate-root'];
    expect(root.properties.pet).toEqual({ $ref: '#/$defs/pet' });
    expect(root.properties.tag).toEqual({ oneOf: [{ type: 'string', maxLength: 4 }, { type: 'null' }] });
    expect(root.properties.kids).toEqual({ type: 'array', items: { $ref: '#/$defs/tollgate-root' }, maxItems: 2 });
  });

  it('holds integers to a small range as an enum, with multipleOf; a list of types as alternatives; a tuple as prefixItems', () => {
    expect(grammarSchema({ type: 'integer', minimum: 10, maximum: 12 }, P).schema).toEqual({ enum: [10, 11, 12] });
    expect(grammarSchema({ type: 'integer', exclusiveMinimum: 0, maximum: 10, multipleOf: 5 }, P).schema).toEqual({ enum: [5, 10] });
    expect(grammarSchema({ type: 'integer', minimum: 1, exclusiveMaximum: true, maximum: 3 }, P).schema).toEqual({ enum: [1, 2] });
    expect(grammarSchema({ type: ['string', 'null'], maxLength: 3 }, P).schema).toEqual({
      oneOf: [{ type: 'string', maxLength: 3 }, { type: 'null' }],
    });
    expect(grammarSchema({ type: 'array', items: [{ type: 'boolean' }], additionalItems: false }, P).schema).toEqual({
      type: 'array',
      prefixItems: [{ type: 'boolean' }],
      maxItems: 1,
    });
    expect(grammarSchema({ allOf: [{ type: 'boolean' }], description: 'one' }, P).schema).toEqual({ type: 'boolean' });
    // Bounds beyond what the grammar's numbers reach (zod's int() writes the safe-integer ones) hold already.
    expect(grammarSchema({ type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 }, P).schema).toEqual({
      type: 'integer',
    });
  });

  it('gives the common one-sided bounds rules of their own, swapped into the grammar text', () => {
    const { schema, rules } = grammarSchema(
      {
        type: 'object',
        properties: {
          count: { type: 'integer', minimum: 0 },
          again: { type: 'integer', minimum: 0 },
          score: { type: 'number', minimum: 0, maximum: 1 },
          price: { type: 'number', exclusiveMinimum: 0 },
        },
      },
      P,
    );
    const props = schema.properties as Record<string, { const: string }>;
    expect(props.count).toEqual(props.again); // one rule per bound
    expect(rules.size).toBe(3);
    const text = patchGrammar(
      `root ::= "{" val0 "," "\\"${props.score.const}\\"" "}"\nval0 ::= "\\"${props.count.const}\\""\n` +
        'integer-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?\n' +
        'fractional-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?',
      rules,
    );
    expect(text).toContain(`val0 ::= ${props.count.const}\n`);
    expect(text).toContain(`"," ${props.score.const} "}"`);
    expect(text).toContain(`\n${props.count.const} ::= "0" | [1-9] [0-9]{0,14}`);
    expect(text).not.toMatch(/\[eE\]/); // numbers without exponents
    expect(text).toContain('integer-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,14})\n');
  });
});
