// The adapters' default onError (Fastify with its logger off: the console; Nest: its Logger):
// a key function that throws on every request is said a few times, not once per request, while
// a user's onError still hears every error.
import { Logger } from '@nestjs/common';
import { fixedWindow } from '@sluice/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { subjects } from './subjects.js';

describe.each(subjects)('default onError ($name)', (subject) => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('a key function that throws on every request: its error with the stack once, not per request', async () => {
    const written: unknown[][] = [];
    const write = (...args: unknown[]) => {
      written.push(args);
    };
    // Nest's defaults write through its Logger (message, stack); the others to console.error.
    if (subject.name.startsWith('nest')) vi.spyOn(Logger.prototype, 'error').mockImplementation(write);
    else vi.spyOn(console, 'error').mockImplementation(write);
    const message = `malformed client input (${subject.name})`;
    const app = await subject.build({
      options: {
        name: 'k',
        algorithm: fixedWindow({ limit: 1000, window: '1m' }),
        key: () => {
          throw new Error(message);
        },
      },
      routes: [{ method: 'GET', path: '/' }],
    });
    try {
      for (let i = 0; i < 30; i++) expect((await app.request('GET', '/')).status).toBe(200);
    } finally {
      await app.close();
    }
    const withTheError = written.filter((args) =>
      // console.error gets the Error; Nest's Logger its message in a line, and the stack.
      args.some((arg) =>
        arg instanceof Error ? arg.message === message : String(arg).endsWith(`: ${message}`),
      ),
    );
    expect(withTheError).toHaveLength(1);
    // At most a count line besides, should the 30 requests have taken past the summary interval.
    expect(written.length).toBeLessThanOrEqual(2);
  });

  it("a user's onError hears every error", async () => {
    const errors: Error[] = [];
    const app = await subject.build({
      options: {
        name: 'k',
        algorithm: fixedWindow({ limit: 1000, window: '1m' }),
        key: () => {
          throw new Error('bad');
        },
        onError: (error) => errors.push(error),
      },
      routes: [{ method: 'GET', path: '/' }],
    });
    try {
      for (let i = 0; i < 5; i++) await app.request('GET', '/');
    } finally {
      await app.close();
    }
    expect(errors).toHaveLength(5);
  });
});
