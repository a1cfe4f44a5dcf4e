import type { ExecutionContext } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import {
  ConcurrencyLimitGuard,
  FleetShedGuard,
  fixedWindow,
  MemoryStore,
  RateLimit,
  RateLimitGuard,
  SkipRateLimit,
  SluiceError,
  UtilizationShedder,
  UtilizationShedGuard,
} from '@sluice/nestjs';
import { afterAll, describe, expect, it } from 'vitest';

// Issue 22 §2: a context @sluice/nestjs cannot serve (GraphQL, WebSockets, microservices) is
// refused with a coded error that says what to do, never passed through per request. Nest builds
// such contexts with its own ExecutionContextHost, as here.

class Resolver {
  books(): string[] {
    return [];
  }
}

/** Nest's execution context of `handler` on `type`, of `kind` ('graphql', 'ws', 'rpc'). */
function context(
  kind: string,
  type: new () => object = Resolver,
  handler: string = 'books',
): ExecutionContext {
  const host = new ExecutionContextHost([{}, {}, {}, {}], type as never, (type.prototype as never)[handler]);
  host.setType(kind);
  return host;
}

const algorithm = fixedWindow({ limit: 5, window: '1m' });
const local = new UtilizationShedder();
afterAll(() => local.close());

/** The coded error `run` throws. */
function thrown(run: () => unknown): SluiceError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SluiceError);
    return error as SluiceError;
  }
  throw new Error('no error was thrown: the context was let through');
}

describe('@sluice/nestjs on a context that is not HTTP', () => {
  it.each(['graphql', 'ws', 'rpc'])(
    "RateLimitGuard refuses a '%s' context with ERR_SLUICE_UNSUPPORTED, naming the handler and the fix, on every call",
    (kind) => {
      const guard = new RateLimitGuard({ name: 'burst', algorithm });
      for (let i = 0; i < 3; i++) {
        const error = thrown(() => guard.canActivate(context(kind)));
        expect([error.code, error.option, error.value]).toEqual([
          'ERR_SLUICE_UNSUPPORTED',
          'RateLimitGuard',
          kind,
        ]);
        expect(error.message).toContain(`'${kind}' context (Resolver.books)`);
        expect(error.message).toContain('@SkipRateLimit()');
      }
    },
  );

  it("a route's own @RateLimit() on such a handler is refused the same way, with no global limits", () => {
    class Gateway {
      message(): void {}
    }
    RateLimit({ name: 'messages', algorithm })(Gateway.prototype, 'message', {
      value: Gateway.prototype.message,
    });
    const error = thrown(() =>
      new RateLimitGuard({ global: false }).canActivate(context('ws', Gateway, 'message')),
    );
    expect(error.code).toBe('ERR_SLUICE_UNSUPPORTED');
  });

  it('@SkipRateLimit() leaves the guard nothing to apply: the context passes, nothing read', () => {
    class Skipped {
      books(): string[] {
        return [];
      }
    }
    SkipRateLimit()(Skipped);
    expect(new RateLimitGuard({ name: 'burst', algorithm }).canActivate(context('graphql', Skipped))).toBe(
      true,
    );
  });

  it('the concurrency limit and the shedders refuse it too', () => {
    const guards = [
      new ConcurrencyLimitGuard({ limit: 1 }),
      new FleetShedGuard({ budget: 10, priority: 'normal' }),
      new UtilizationShedGuard({ shedder: local, priority: 'normal' }),
    ];
    for (const guard of guards) {
      const error = thrown(() => guard.canActivate(context('graphql')));
      expect([error.code, error.option]).toEqual(['ERR_SLUICE_UNSUPPORTED', guard.constructor.name]);
      expect(error.message).toContain('@UseGuards');
    }
  });
});

describe('@sluice/nestjs on an HTTP platform other than Express and Fastify', () => {
  it("limits by the platform's req.ip, with no route and no proxy-trust warning, never a per-request failure", async () => {
    const headers = new Map<string, string>();
    const response = {
      header: (name: string, value: string) => headers.set(name.toLowerCase(), value),
      getHeader: (name: string) => headers.get(name.toLowerCase()),
      statusCode: 200,
      writableEnded: false,
      destroyed: false,
      once: () => undefined,
      removeListener: () => undefined,
    };
    const errors: Error[] = [];
    const warnings: string[] = [];
    const guard = new RateLimitGuard({
      name: 'ip',
      algorithm: fixedWindow({ limit: 1, window: '1m' }),
      store: new MemoryStore({ clock: () => 0 }),
      onError: (error) => errors.push(error),
      onWarning: (warning) => warnings.push(warning.code),
    });
    const http = (ip: string) => {
      const request = { method: 'GET', url: '/', headers: { 'x-forwarded-for': '203.0.113.9' }, ip };
      const host = new ExecutionContextHost(
        [request, response, () => undefined],
        Resolver as never,
        Resolver.prototype.books,
      );
      host.setType('http');
      return host;
    };
    expect(await guard.canActivate(http('198.51.100.1'))).toBe(true);
    expect(headers.get('ratelimit')).toBe('"ip";r=0;t=60');
    expect(() => guard.canActivate(http('198.51.100.1'))).toThrow(
      expect.objectContaining({ name: 'RateLimitException' }),
    );
    expect(await guard.canActivate(http('198.51.100.2'))).toBe(true);
    expect([errors, warnings]).toEqual([[], []]);
  });
});
