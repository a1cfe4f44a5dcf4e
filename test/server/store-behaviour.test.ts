import { fixedWindow, Limiter } from '@sluice/core';
import { ServerStore } from '@sluice/server';
import { afterAll, describe, expect, it } from 'vitest';
import { describeStoreBehaviour } from '../suites/store-behaviour.js';
import { startServer } from './harness.js';

const t = await startServer();
const client = await t.client();
afterAll(() => t.stop());

describeStoreBehaviour('ServerStore (sluice-server)', () => new ServerStore({ client }));

describe('ServerStore: shadow mode and blocks', () => {
  it.each([
    [{ enforce: false }, 'enforce'],
    [{ block: '1m' }, 'block'],
  ] as const)(
    '%o is refused with ERR_SLUICE_UNSUPPORTED rather than answered as a plain limit',
    async (extra, option) => {
      const limiter = new Limiter({
        limits: [{ name: 'l', algorithm: fixedWindow({ limit: 1, window: 1000 }), ...extra }],
        store: new ServerStore({ client }),
      });
      await expect(limiter.check('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_UNSUPPORTED', option });
      await expect(limiter.peek('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_UNSUPPORTED', option });
    },
  );
});
