// Global setup is where later suites start their redis-server processes (see test/setup/redis.ts).
export default async function setup(): Promise<() => Promise<void>> {
  return async () => {};
}
