import type { Algorithm } from '../algorithm.js';
import type { Store } from '../store.js';

/**
 * A plan changed for `key` (seen by this process, which remembers the previous plan): what the
 * client consumed under the previous plan (`limit - remaining`) is taken from the new one, as
 * far as it has room (`Store.charge`), and the previous plan's state is dropped. An upgrade
 * keeps its consumption, it does not start afresh; a downgrade is not driven below zero.
 */
export async function carryPlan(
  store: Store,
  policy: string,
  previous: Algorithm,
  next: Algorithm,
  key: string,
): Promise<void> {
  const [old] = await store.peek([{ algorithm: previous, key, cost: 1, policy }], undefined);
  const used = old === undefined ? 0 : Math.max(0, old.limit - old.remaining);
  if (used > 0 && store.charge !== undefined) {
    await store.charge([{ algorithm: next, key, cost: Math.min(used, next.limit), policy }], undefined);
  }
  await store.reset([{ algorithm: previous, key }]);
}
