// Sign-up and sign-in for the dashboard (issue 15): the `accounts:` section of the config file.
import { z } from 'zod';

export const SIGNUP_POLICIES = ['open', 'invite', 'closed'] as const;
export type SignupPolicy = (typeof SIGNUP_POLICIES)[number];

export const accountsSchema = z
  .strictObject({
    /**
     * open: anyone signs up (onto the free tier); invite: sign-up needs one of `invite_codes`;
     * closed: only operators create accounts (`tollgate accounts create` prints a set-password link).
     */
    signup: z.enum(SIGNUP_POLICIES).default('open'),
    /** The codes `invite` accepts at sign-up (each may be used by any number of people). */
    invite_codes: z.array(z.string().min(8)).default([]),
    /** How long a sign-in lasts without being used. */
    session_days: z.number().positive().max(365).default(30),
    /** Failed sign-ins per e-mail address (and per client address) in 15 minutes before sign-in is refused for a while. */
    max_failed_logins: z.number().int().positive().default(5),
  })
  .default({ signup: 'open', invite_codes: [], session_days: 30, max_failed_logins: 5 });

export type AccountsSettings = z.infer<typeof accountsSchema>;
