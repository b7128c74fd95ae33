// What the top-up result page says about a top-up beside its amounts: the failure reason, only
// where the top-up did fail (a checkout paid after an earlier failed or expired state keeps no
// reason to show), and a dispute's state in words that hold whichever of its events came first.

/** The states whose failure reason explains what the customer sees. */
const FAILED_STATES: ReadonlySet<string> = new Set(['failed', 'expired']);

export function shownFailureReason(t: { status: string; failureReason?: string | null }): string | null {
  return t.failureReason && FAILED_STATES.has(t.status) ? t.failureReason : null;
}

/**
 * A dispute: its funds withdrawn (credits taken back), or reinstated (the dispute won). Won, what
 * it took is given back; funds reinstated before their withdrawal reached tollgate took and gave
 * nothing, so the words promise no credits given back.
 */
export function disputeText(dispute: 'withdrawn' | 'reinstated' | string): string {
  return dispute === 'withdrawn' ? 'Funds withdrawn: credits taken back' : 'Won: whatever it took back was given back';
}
