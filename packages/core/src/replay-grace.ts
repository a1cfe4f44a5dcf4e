import { type Duration, parseDuration } from './duration.js';
import { ErrorCode, SluiceError } from './errors.js';

/**
 * What a store that expires states by its own clock (Redis, LMDB) adds to the life of a state
 * written at a `now` the caller passed (a replay): the trace's time may stand still while the
 * store's clock runs, and a state must not expire before the replay has used it. RedisStore and
 * HostStore share the option, its default and its bounds.
 */
export const REPLAY_GRACE_DEFAULT: Duration = '10m';

/** Longest replay grace: 30 days (Redis's PX must stay a plain integer). */
const MAX_REPLAY_GRACE = 30 * 86_400_000;

/** `replayGrace` of `store`'s options in whole ms (its default when absent); 0 is none. */
export function replayGraceOption(store: string, value: Duration | 0 | undefined): number {
  if (value === 0) return 0;
  const ms = Math.ceil(parseDuration('replayGrace', value ?? REPLAY_GRACE_DEFAULT));
  if (ms > MAX_REPLAY_GRACE) {
    throw new SluiceError(ErrorCode.INVALID_OPTION, `${store}: replayGrace must be at most 30 days`, {
      option: 'replayGrace',
      value,
    });
  }
  return ms;
}
