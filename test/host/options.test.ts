import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixedWindow, Limiter } from '@sluice/core';
import { HostStore, type HostStoreOptions } from '@sluice/host';
import { describe, expect, it } from 'vitest';
import { tempPath } from './helpers.js';

const coded = (code: string, option: string, message?: RegExp) =>
  expect.objectContaining({ code, option, ...(message ? { message: expect.stringMatching(message) } : {}) });

describe('HostStore options, validated at creation', () => {
  const path = tempPath('options');

  it('path is required, and must be a non-empty string', () => {
    expect(() => new HostStore({} as HostStoreOptions)).toThrow(coded('ERR_SLUICE_MISSING_OPTION', 'path'));
    expect(() => new HostStore(undefined as unknown as HostStoreOptions)).toThrow(
      coded('ERR_SLUICE_MISSING_OPTION', 'path'),
    );
    for (const bad of ['', 42]) {
      expect(() => new HostStore({ path: bad as string })).toThrow(
        coded('ERR_SLUICE_INVALID_OPTION', 'path'),
      );
    }
  });

  it('an unknown option (a typo) is refused by name', () => {
    expect(() => new HostStore({ path, maxkeys: 10 } as HostStoreOptions)).toThrow(
      coded('ERR_SLUICE_UNKNOWN_OPTION', 'maxkeys'),
    );
  });

  it.each([
    ['maxKeys', 0, /^maxKeys must be an integer ≥ 1; got 0/],
    ['maxKeys', 1.5, /^maxKeys must be an integer/],
    ['durability', 'always', /^durability must be one of 'commit', 'flush'; got "always"/],
    ['shards', 0, /^shards must be an integer from 1 to 64; got 0/],
    ['shards', 65, /^shards must be an integer from 1 to 64; got 65/],
    ['cacheKeys', -1, /^cacheKeys must be an integer ≥ 0/],
    ['sweepInterval', -5, /^sweepInterval must be an integer from 0/],
    ['sweepBatch', 0, /^sweepBatch must be an integer ≥ 1/],
    ['clock', 123, /^clock must be a function/],
    ['replayGrace', '31d', /^HostStore: replayGrace must be at most 30 days/],
    ['logger', { log() {} }, /^logger must be an object with warn/],
  ] as const)('%s: %o is refused, naming the option and the value', (option, value, message) => {
    expect(() => new HostStore({ path, [option]: value } as HostStoreOptions)).toThrow(
      coded('ERR_SLUICE_INVALID_OPTION', option, message),
    );
  });

  it('a directory holding other files is refused, naming them, and left alone', () => {
    const dir = tempPath('foreign');
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    expect(() => new HostStore({ path: dir })).toThrow(
      coded('ERR_SLUICE_INVALID_OPTION', 'path', /not a sluice host store environment \(notes\.txt\)/),
    );
  });

  it("a path that is a file is refused, with no word of sluice-server (its hint is the server's)", () => {
    const file = join(tempPath('file'), 'data.file');
    writeFileSync(file, 'x');
    let error: unknown;
    try {
      new HostStore({ path: file, logger: false });
    } catch (err) {
      error = err;
    }
    expect(error).toEqual(coded('ERR_SLUICE_INVALID_OPTION', 'path', /is not a directory/));
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).not.toMatch(/sluice-server/);
  });

  it('a filesystem error (a path under a file) is a coded error naming the path and the OS code, the original kept', () => {
    const file = join(tempPath('file'), 'plain');
    writeFileSync(file, 'x');
    const path = join(file, 'sub');
    let error: unknown;
    try {
      new HostStore({ path, logger: false });
    } catch (err) {
      error = err;
    }
    expect(error).toEqual(coded('ERR_SLUICE_INVALID_OPTION', 'path', /ENOTDIR/));
    expect((error as Error).message).toContain(path);
    expect((error as Error).cause).toMatchObject({ code: 'ENOTDIR' });
  });

  it('a path that does not exist yet is created', async () => {
    const dir = join(tempPath('parent'), 'a', 'b');
    const store = new HostStore({ path: dir, logger: false });
    await store.shutdown();
    mkdirSync(dir, { recursive: true });
  });

  it('the defaults, as documented', async () => {
    const store = new HostStore({ path: tempPath('defaults') });
    const { clock, logger, ...rest } = store.options;
    expect(rest).toEqual({
      path: expect.any(String),
      maxKeys: 1_000_000,
      durability: 'commit',
      cacheKeys: 10_000,
      sweepInterval: 1000,
      sweepBatch: 1000,
      replayGrace: 600_000,
    });
    expect(clock).toBe(Date.now);
    expect(logger).toBe(console);
    await store.shutdown();
  });

  it('after shutdown (idempotent), calls are refused with a coded error, never answered', async () => {
    const store = new HostStore({ path: tempPath('closed'), logger: false });
    const limiter = new Limiter({ algorithm: fixedWindow({ limit: 1, window: 1000 }), store });
    await limiter.check('k');
    await Promise.all([store.shutdown(), store.shutdown()]);
    await expect(limiter.check('k')).rejects.toMatchObject({
      code: 'ERR_SLUICE_STORE_FAILURE',
      message: expect.stringMatching(/HostStore was shut down/),
    });
    await expect(Promise.resolve().then(() => limiter.peek('k'))).rejects.toMatchObject({
      code: 'ERR_SLUICE_STORE_FAILURE',
    });
  });
});
