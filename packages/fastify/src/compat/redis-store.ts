import { ErrorCode, SluiceError, type Store } from '@sluice/core';

/** The module name, kept out of the bundler's sight: `@sluice/redis` is an optional peer. */
const REDIS_PACKAGE = '@sluice/redis';

/**
 * `redis` (an ioredis client, as @fastify/rate-limit takes it) as a sluice `RedisStore` from
 * `@sluice/redis`, loaded only when the option is given, so an app without Redis needs no
 * `@sluice/redis`. Keys start with `nameSpace` as there. A store failure is answered as each
 * limit's `skipOnError` says: let through, or failed (the store's error goes to the app's error
 * handler); sluice's own `'local'` fallback is not the peer's behaviour.
 */
export async function redisStoreOf(
  client: unknown,
  nameSpace: string | undefined,
  failed: (error: unknown) => void,
  logger: { warn(message: string): void },
): Promise<Store> {
  let module: { RedisStore: new (options: Record<string, unknown>) => Store };
  try {
    module = (await import(REDIS_PACKAGE)) as typeof module;
  } catch (error) {
    throw new SluiceError(
      ErrorCode.MISSING_OPTION,
      'fromFastifyRateLimit: redis needs @sluice/redis installed beside @sluice/fastify (npm install @sluice/redis)',
      { option: 'redis', cause: error },
    );
  }
  return new module.RedisStore({
    client,
    prefix: nameSpace ?? 'fastify-rate-limit-',
    // Let through, uncounted (reason 'store-unavailable'): each limit then answers as its own
    // `skipOnError` says, a route's as well as the plugin's.
    failurePolicy: 'allow',
    // The failure itself, for the refusal thrown to the app's error handler; the few lines of
    // the store's log still go to the app's logger.
    onError: (event: { error: unknown }) => failed(event.error),
    logger,
  });
}
