import { byRoute, fixedWindow, type SluiceWarning, UtilizationShedder } from '@sluice/core';
import { concurrencyLimit, fleetShed, rateLimit, utilizationShed } from '@sluice/express';
import express from 'express';
import supertest from 'supertest';
import { describe, expect, it } from 'vitest';
import { forgetWarnings } from '../setup/process-warnings.js';

describe('express specifics', () => {
  it('byRoute() in app.use() has no route yet: the limit is skipped and a warning given once', async () => {
    forgetWarnings();
    const warnings: SluiceWarning[] = [];
    const app = express();
    app.use(
      rateLimit({
        name: 'r',
        key: byRoute(),
        algorithm: fixedWindow({ limit: 1, window: '1m' }),
        onWarning: (w) => warnings.push(w),
      }),
    );
    app.get('/x', (_req, res) => {
      res.send('ok');
    });
    for (let i = 0; i < 3; i++) {
      const response = await supertest(app).get('/x');
      expect([response.status, response.headers.ratelimit]).toEqual([200, undefined]);
    }
    expect(warnings.map((w) => w.code)).toEqual(['SLUICE_ROUTE_UNKNOWN']);
  });

  it('Express guard middlewares are named', () => {
    const shedder = new UtilizationShedder({ timer: false });
    expect(
      [
        concurrencyLimit({ limit: 1 }),
        fleetShed({ budget: 5, priority: 'low' }),
        utilizationShed({ shedder, priority: 'low' }),
      ].map((m) => m.name),
    ).toEqual(['sluiceConcurrencyLimit', 'sluiceFleetShed', 'sluiceUtilizationShed']);
  });
});
