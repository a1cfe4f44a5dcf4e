import { fixedWindow } from '@sluice/core';
import { sluice } from '@sluice/fastify';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';

// A route config that is not an options object or `false` was spread into one: `'yes'` became
// `{ 0: 'y', 1: 'e', 2: 's' }` ("unknown option 0") and `true` became `{}` (silently the global
// limits). Each is now refused at registration with a coded error naming the route and option.
describe('fastify route config values', () => {
  const bad: [string, unknown][] = [
    ['rateLimit', 'yes'],
    ['rateLimit', true],
    ['rateLimit', 1],
    ['rateLimit', null],
    ['rateLimit', []],
    ['concurrencyLimit', 'yes'],
    ['fleetShed', true],
    ['utilizationShed', 1],
  ];
  for (const [option, value] of bad) {
    it(`config.${option}: ${JSON.stringify(value)} is refused with ERR_SLUICE_INVALID_OPTION`, async () => {
      const app = Fastify();
      await app.register(sluice, { name: 'g', algorithm: fixedWindow({ limit: 1, window: '1m' }) });
      let thrown: unknown;
      try {
        app.get('/r', { config: { [option]: value } as never }, async () => 'x');
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({
        name: 'SluiceError',
        code: 'ERR_SLUICE_INVALID_OPTION',
        option: `config.${option}`,
        value,
      });
      expect((thrown as Error).message).toBe(
        `config.${option} of /r must be an options object or false; got ${
          typeof value === 'string'
            ? JSON.stringify(value)
            : Array.isArray(value)
              ? 'an array'
              : String(value)
        }`,
      );
      await app.close();
    });
  }

  it('a misspelt option in a route config is refused by name', async () => {
    const app = Fastify();
    await app.register(sluice, {});
    expect(() => app.get('/r', { config: { rateLimit: { limitz: [] } as never } }, async () => 'x')).toThrow(
      expect.objectContaining({ code: 'ERR_SLUICE_UNKNOWN_OPTION', option: 'limitz' }),
    );
    await app.close();
  });
});
