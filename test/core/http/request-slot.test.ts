/**
 * Issue 36: every property a middleware adds to a Node request object is a new hidden class for V8
 * (requests share none), about 38,000 instructions each in an Express server. Sluice's slots (the
 * ledger across middlewares, each middleware's reservation) therefore share one property on the
 * request, a holder, whatever their number.
 */
import { fixedWindow, rateLimit } from '@sluice/express';
import express from 'express';
import supertest from 'supertest';
import { describe, expect, it } from 'vitest';
import { RequestSlot } from '../../../packages/core/src/http/request-slot.js';

/** The symbols sluice put on `req` (Node's own requests carry symbols of Node's). */
const sluiceSymbols = (req: object) =>
  Object.getOwnPropertySymbols(req).filter((symbol) => symbol.description?.startsWith('sluice') === true);

describe('RequestSlot', () => {
  it('keeps each slot apart on one request, and a request never set reads undefined', () => {
    const a = new RequestSlot<string>();
    const b = new RequestSlot<number>();
    const req = {};
    expect(a.get(req)).toBeUndefined();
    a.set(req, 'x');
    b.set(req, 2);
    expect([a.get(req), b.get(req)]).toEqual(['x', 2]);
    a.delete(req);
    expect([a.get(req), b.get(req)]).toEqual([undefined, 2]);
    a.set(req, 'y');
    expect(a.get(req)).toBe('y');
    expect(a.get({})).toBeUndefined();
    b.delete({});
  });

  it('adds one property to a request however many slots are set on it', () => {
    const slots = [new RequestSlot<number>(), new RequestSlot<number>(), new RequestSlot<number>()];
    const req = { url: '/' };
    for (const [i, slot] of slots.entries()) slot.set(req, i);
    expect(Object.keys(req)).toEqual(['url']);
    expect(sluiceSymbols(req)).toHaveLength(1);
    expect(slots.map((slot) => slot.get(req))).toEqual([0, 1, 2]);
  });

  it('an Express request through two sluice rate limits carries rateLimit and one sluice property', async () => {
    let seen: symbol[] = [];
    const app = express();
    app.use(rateLimit({ algorithm: fixedWindow({ limit: 10, window: '1m' }) }));
    app.get(
      '/',
      rateLimit({ name: 'route', algorithm: fixedWindow({ limit: 5, window: '1m' }) }),
      (req, res) => {
        seen = sluiceSymbols(req);
        res.json({ remaining: req.rateLimit?.remaining });
      },
    );
    const response = await supertest(app).get('/');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ remaining: 4 });
    expect(seen).toHaveLength(1);
  });
});
