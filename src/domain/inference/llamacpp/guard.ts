// Moderation with a guard model (Llama Guard 3's format): its prompt, the grammar its verdict is
// generated under, and the mapping of its hazard codes onto the specification's categories.
//
// | code | Llama Guard 3 hazard           | tollgate categories              |
// |------|--------------------------------|----------------------------------|
// | S1   | Violent Crimes                 | violence                         |
// | S2   | Non-Violent Crimes             | illicit                          |
// | S3   | Sex-Related Crimes             | sexual, harassment               |
// | S4   | Child Sexual Exploitation      | sexual/minors, sexual            |
// | S5   | Defamation                     | defamation                       |
// | S6   | Specialized Advice             | specialized-advice               |
// | S7   | Privacy                        | privacy                          |
// | S8   | Intellectual Property          | intellectual-property            |
// | S9   | Indiscriminate Weapons         | illicit/violent, violence        |
// | S10  | Hate                           | hate, harassment                 |
// | S11  | Suicide & Self-Harm            | self-harm                        |
// | S12  | Sexual Content                 | sexual                           |
// | S13  | Elections                      | elections                        |
// | S14  | Code Interpreter Abuse         | code-interpreter-abuse           |
//
// Llama Guard has no harassment code: S3 (which covers sexual harassment) and S10 (demeaning people
// for who they are) are the closest, so both also flag `harassment`.

export interface HazardCode {
  code: string;
  name: string;
  categories: string[];
}

export const HAZARD_CODES: readonly HazardCode[] = [
  { code: 'S1', name: 'Violent Crimes', categories: ['violence'] },
  { code: 'S2', name: 'Non-Violent Crimes', categories: ['illicit'] },
  { code: 'S3', name: 'Sex Crimes', categories: ['sexual', 'harassment'] },
  { code: 'S4', name: 'Child Exploitation', categories: ['sexual/minors', 'sexual'] },
  { code: 'S5', name: 'Defamation', categories: ['defamation'] },
  { code: 'S6', name: 'Specialized Advice', categories: ['specialized-advice'] },
  { code: 'S7', name: 'Privacy', categories: ['privacy'] },
  { code: 'S8', name: 'Intellectual Property', categories: ['intellectual-property'] },
  { code: 'S9', name: 'Indiscriminate Weapons', categories: ['illicit/violent', 'violence'] },
  { code: 'S10', name: 'Hate', categories: ['hate', 'harassment'] },
  { code: 'S11', name: 'Self-Harm', categories: ['self-harm'] },
  { code: 'S12', name: 'Sexual Content', categories: ['sexual'] },
  { code: 'S13', name: 'Elections', categories: ['elections'] },
  { code: 'S14', name: 'Code Interpreter Abuse', categories: ['code-interpreter-abuse'] },
];

/** Every category a guard result carries, the specification's five first. */
export const GUARD_CATEGORIES: readonly string[] = [
  ...new Set(['hate', 'harassment', 'self-harm', 'sexual', 'violence', ...HAZARD_CODES.flatMap((h) => h.categories)]),
];

/**
 * The verdict grammar: "safe", or "unsafe", a newline and one to three codes S1–S14. Bounded, so a
 * model (even a random one) always completes it within a few tokens, and the result always parses.
 */
export const VERDICT_GRAMMAR = [
  'root ::= "safe" | "unsafe\\n" codes',
  'codes ::= code | code "," code | code "," code "," code',
  'code ::= "S" ([1-9] | "1" [0-4])',
].join('\n');

/** The digits after "unsafe\nS": the first code's number, read for its probabilities. */
export const CODE_DIGITS_GRAMMAR = 'root ::= [1-9] | "1" [0-4]';

/** Text the verdict's first code follows (teacher-forced to read the code probabilities). */
export const UNSAFE_PREFIX = 'unsafe\nS';

/** Llama Guard 3's task prompt (its model card's format) for one user message. */
export function guardPrompt(input: string): string {
  const categories = HAZARD_CODES.map((h) => `${h.code}: ${h.name}.`).join('\n');
  return [
    "Task: Check if there is unsafe content in 'User' messages in conversations according our safety policy with the below categories.",
    '',
    '<BEGIN UNSAFE CONTENT CATEGORIES>',
    categories,
    '<END UNSAFE CONTENT CATEGORIES>',
    '',
    '<BEGIN CONVERSATION>',
    '',
    `User: ${input}`,
    '',
    '<END CONVERSATION>',
    '',
    'Provide your safety assessment for ONLY THE LAST User message in the above conversation:',
    " - First line must read 'safe' or 'unsafe'.",
    ' - If unsafe, a second line must include a comma-separated list of violated categories.',
  ].join('\n');
}

export interface Verdict {
  unsafe: boolean;
  codes: string[];
}

/** Parses a verdict the grammar produced; anything else (it cannot happen under the grammar) is an error. */
export function parseVerdict(text: string): Verdict {
  if (text === 'safe') return { unsafe: false, codes: [] };
  const m = /^unsafe\n(S(?:1[0-4]|[1-9])(?:,S(?:1[0-4]|[1-9])){0,2})$/.exec(text);
  if (!m) throw new Error(`guard verdict does not parse: ${JSON.stringify(text)}`);
  return { unsafe: true, codes: [...new Set(m[1]!.split(','))] };
}

/**
 * Shapes a verdict and its probabilities into the specification's result: `flagged` when unsafe, a
 * category flagged when one of its codes is in the verdict, and each category's score the
 * probability of "unsafe" times the highest probability among its codes.
 */
export function moderationFromVerdict(
  verdict: Verdict,
  unsafeProbability: number,
  codeProbabilities: Map<string, number>,
): { flagged: boolean; categories: Record<string, boolean>; categoryScores: Record<string, number> } {
  const categories: Record<string, boolean> = {};
  const categoryScores: Record<string, number> = {};
  for (const name of GUARD_CATEGORIES) {
    categories[name] = false;
    categoryScores[name] = 0;
  }
  for (const hazard of HAZARD_CODES) {
    const score = clamp01(unsafeProbability * (codeProbabilities.get(hazard.code) ?? 0));
    const flagged = verdict.codes.includes(hazard.code);
    for (const c of hazard.categories) {
      categoryScores[c] = Math.max(categoryScores[c]!, score);
      if (flagged) categories[c] = true;
    }
  }
  return { flagged: verdict.unsafe, categories, categoryScores };
}

function clamp01(x: number): number {
  return Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0;
}
