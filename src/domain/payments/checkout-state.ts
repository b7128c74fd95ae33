// The states of a top-up (a hosted checkout, or an automatic top-up charged off-session) and the
// moves between them. The specification shows none; these are ours:
//
//   open ──► paid        the processor confirmed the money (credits added, once)
//   open ──► expired     the checkout's time ran out unpaid
//   open ──► canceled    the customer canceled at the checkout page
//   open ──► failed      the payment failed (an async method, a declined card off-session)
//   expired | canceled | failed ──► paid   only on a payment the processor confirms: money that
//                        was received is always credited, whatever our record said before (an
//                        out-of-order event, a race between cancel and pay at the processor).
//
// `paid` is final. Every move is a conditional update on the current state, so of two racing
// moves one wins and the other sees the new state.

export const TOP_UP_STATES = ['open', 'paid', 'expired', 'canceled', 'failed'] as const;
export type TopUpState = (typeof TOP_UP_STATES)[number];

export function isTopUpState(value: unknown): value is TopUpState {
  return typeof value === 'string' && (TOP_UP_STATES as readonly string[]).includes(value);
}

/** Who asks for a move: the processor confirming a payment, or anything else (page, expiry, events). */
export type MoveCause = 'confirmed_payment' | 'other';

export function canMove(from: TopUpState, to: TopUpState, cause: MoveCause = 'other'): boolean {
  if (from === to) return false;
  if (from === 'paid') return false;
  if (from === 'open') return to !== 'open' && (to !== 'paid' || cause === 'confirmed_payment');
  // expired, canceled, failed: final, except for money the processor says it received.
  return to === 'paid' && cause === 'confirmed_payment';
}

/** States a top-up can leave no more (a confirmed payment aside). */
export function isSettled(state: TopUpState): boolean {
  return state !== 'open';
}

/** Where a top-up comes from: a hosted checkout (POST /v1/wallet/top-up, Mutation.topUp) or an automatic top-up. */
export type TopUpSource = 'checkout' | 'auto';
