// The HTTP endpoints of payments that are neither /v1 nor GraphQL: pages a browser opens and a
// processor's callbacks. Each handler makes one PaymentsService call.
//   GET  /checkout/sandbox/{id}            the sandbox's hosted checkout page
//   POST /checkout/sandbox/{id}/complete   its Pay button (JSON clients get the top-up as JSON)
//   POST /checkout/sandbox/{id}/cancel     its Cancel button
//   GET  /checkout/{id}                    the status page (the default success and cancel URL)
//   POST /webhooks/stripe                  Stripe's events, verified against the raw body
import express, { type Request, type Response } from 'express';
import { httpError as errorResponse } from '../graphql/errors.js';
import { DomainError } from '../domain/errors.js';
import type { Logger } from '../logger.js';
import { formatMoney } from '../domain/payments/amounts.js';
import type { PaymentsService, TopUpView } from '../domain/payments/payments-service.js';
import { checkoutStatusPage, errorPage, sandboxCheckoutPage } from './checkout-pages.js';

export interface PaymentsRouterOptions {
  payments: PaymentsService;
  logger: Logger;
  /** Largest webhook body accepted. */
  bodyLimit: string;
}

/** The top-up as JSON (money as numbers in currency units, as /v1 shows money). */
export function topUpJson(t: TopUpView) {
  return {
    id: t.id,
    object: 'wallet.top_up',
    status: t.status,
    amount: Number(formatMoney(t.amount)),
    bonus: Number(formatMoney(t.bonus)),
    bonus_percent: Number(t.bonusPercent),
    credits: Number(formatMoney(t.credits)),
    currency: t.currency,
    checkout_url: t.checkoutUrl,
    created_at: t.createdAt.toISOString(),
    expires_at: t.expiresAt?.toISOString() ?? null,
  };
}

export function createPaymentsRouter(o: PaymentsRouterOptions) {
  const router = express.Router();
  const { payments } = o;

  const fail = (req: Request, res: Response, err: unknown) => {
    const { status, body } = errorResponse(err, (e) => o.logger.error({ reqId: req.requestId, err: e }, 'unexpected error'));
    if (wantsHtml(req)) {
      res
        .status(status)
        .type('html')
        .send(errorPage(status, body.error.message, payments.backUrl));
      return;
    }
    res.status(status).json(body);
  };

  const pageHeaders = (res: Response) => {
    res.setHeader('Cache-Control', 'no-store');
    // No script, forms only to ourselves, never framed (a hidden Pay button is a clickjacking target).
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'no-referrer');
  };

  if (payments.processorName === 'sandbox') {
    router.get('/checkout/sandbox/:id', async (req, res) => {
      try {
        const t = await payments.getSandboxCheckout(String(req.params.id));
        pageHeaders(res);
        res.type('html').send(sandboxCheckoutPage(t, encodeURIComponent(t.id)));
      } catch (err) {
        fail(req, res, err);
      }
    });
    router.post('/checkout/sandbox/:id/complete', async (req, res) => {
      try {
        const t = await payments.completeSandboxCheckout(String(req.params.id));
        if (wantsHtml(req)) return void res.redirect(303, payments.afterCheckoutUrl('success', t.id));
        res.json(topUpJson(t));
      } catch (err) {
        fail(req, res, err);
      }
    });
    router.post('/checkout/sandbox/:id/cancel', async (req, res) => {
      try {
        const t = await payments.cancelSandboxCheckout(String(req.params.id));
        if (wantsHtml(req)) return void res.redirect(303, payments.afterCheckoutUrl('cancel', t.id));
        res.json(topUpJson(t));
      } catch (err) {
        fail(req, res, err);
      }
    });
  }

  router.get('/checkout/:id', async (req, res) => {
    try {
      const { topUp: t, balance } = await payments.checkoutStatus(String(req.params.id));
      if (t.source !== 'checkout') throw notFound(String(req.params.id));
      if (!wantsHtml(req)) return void res.json(topUpJson(t));
      pageHeaders(res);
      res.type('html').send(checkoutStatusPage(t, { simulated: payments.simulated, balance, backUrl: payments.backUrlFor(t.id) }));
    } catch (err) {
      fail(req, res, err);
    }
  });

  if (payments.processorName === 'stripe') {
    // The signature covers the exact bytes Stripe sent: the body is read raw, never re-serialised.
    const raw = express.raw({ type: () => true, limit: o.bodyLimit });
    router.post('/webhooks/stripe', raw, async (req, res) => {
      try {
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const { eventId, outcome } = await payments.handleWebhook(body, req.header('stripe-signature'));
        o.logger.info({ reqId: req.requestId, event: eventId, outcome }, 'stripe webhook');
        res.json({ received: true, outcome });
      } catch (err) {
        const { status, body } = errorResponse(err, (e) => o.logger.error({ reqId: req.requestId, err: e }, 'stripe webhook failed'));
        if (status === 400) o.logger.warn({ reqId: req.requestId, reason: body.error.message }, 'stripe webhook refused');
        // 4xx: Stripe stops (a forged or stale delivery); 5xx: it retries later.
        res.status(status).json(body);
      }
    });
  }

  return router;
}

function wantsHtml(req: Request): boolean {
  return req.accepts(['json', 'html']) === 'html';
}

function notFound(id: string): DomainError {
  return new DomainError('not_found', `No checkout with id '${id.slice(0, 60)}'.`, { param: 'id' });
}
