// Delivers a Stripe event to our webhook endpoint the way Stripe does: the JSON body signed with
// the endpoint's secret in a Stripe-Signature header (`t=<timestamp>,v1=<HMAC>`), made by the
// SDK's own generateTestHeaderString. Options forge the signature or age the timestamp.
import Stripe from 'stripe';
import type { StripeEvent } from './fake-stripe.js';

export const TEST_WEBHOOK_SECRET = 'whsec_test_0123456789abcdef0123456789abcdef';
export const TEST_SECRET_KEY = 'sk_test_tollgate_fake_0123456789';

const signer = new Stripe(TEST_SECRET_KEY).webhooks;

export interface DeliveryOptions {
  /** Sign with another secret (a forged delivery). */
  secret?: string;
  /** Unix seconds the signature claims (default now): an old one is a replay. */
  timestamp?: number;
  /** Send no Stripe-Signature header at all. */
  unsigned?: boolean;
  /** Change the body after signing it. */
  tamper?: (body: string) => string;
}

export interface Delivery {
  status: number;
  body: unknown;
}

export function signedHeader(payload: string, opts: { secret?: string; timestamp?: number } = {}): string {
  return signer.generateTestHeaderString({ payload, secret: opts.secret ?? TEST_WEBHOOK_SECRET, timestamp: opts.timestamp });
}

export async function deliverStripeEvent(serverUrl: string, event: StripeEvent, opts: DeliveryOptions = {}): Promise<Delivery> {
  const payload = JSON.stringify(event, null, 2);
  const header = signedHeader(payload, opts);
  const res = await fetch(`${serverUrl}/webhooks/stripe`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
      ...(opts.unsigned ? {} : { 'stripe-signature': header }),
    },
    body: opts.tamper ? opts.tamper(payload) : payload,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body };
}
