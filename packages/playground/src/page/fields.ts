import type { FactoryName } from '../sim/config.js';

/** A form field for one option of a core factory. Values go to the factory as typed; core validates them. */
export interface OptionField {
  readonly name: string;
  readonly kind: 'integer' | 'duration' | 'choice' | 'flag';
  /** Filled in when a limit of this algorithm is added; optional fields start empty. */
  readonly initial: string | number | boolean | undefined;
  readonly choices?: readonly string[];
  readonly help: string;
}

const WINDOW: OptionField = { name: 'window', kind: 'duration', initial: '1s', help: 'window length' };
const LIMIT: OptionField = { name: 'limit', kind: 'integer', initial: 10, help: 'requests per window' };

/** The options of each factory, as documented in @sluice/core (its JSDoc and README). */
export const OPTION_FIELDS: Readonly<Record<FactoryName, readonly OptionField[]>> = {
  tokenBucket: [
    { name: 'capacity', kind: 'integer', initial: 10, help: 'most tokens: the largest burst' },
    {
      name: 'refillAmount',
      kind: 'integer',
      initial: undefined,
      help: 'tokens per interval (default: capacity)',
    },
    { name: 'refillInterval', kind: 'duration', initial: '1s', help: 'time for refillAmount to come back' },
    {
      name: 'refill',
      kind: 'choice',
      initial: undefined,
      choices: ['continuous', 'stepped'],
      help: 'trickle or steps',
    },
    { name: 'strict', kind: 'flag', initial: undefined, help: 'a refusal restarts the refill clock' },
  ],
  gcra: [
    { name: 'rate', kind: 'integer', initial: 10, help: 'requests per period' },
    { name: 'period', kind: 'duration', initial: '1s', help: 'the period of rate' },
    { name: 'burst', kind: 'integer', initial: undefined, help: 'requests at once (default: rate)' },
  ],
  fixedWindow: [LIMIT, WINDOW],
  slidingWindowLog: [LIMIT, WINDOW],
  slidingWindowCounter: [
    LIMIT,
    WINDOW,
    { name: 'precision', kind: 'integer', initial: undefined, help: 'sub-windows (default 1)' },
  ],
  leakyBucketQueue: [
    { name: 'rate', kind: 'integer', initial: 10, help: 'requests served per period' },
    { name: 'period', kind: 'duration', initial: '1s', help: 'the period of rate' },
    {
      name: 'burst',
      kind: 'integer',
      initial: undefined,
      help: 'served at once without waiting (default 1)',
    },
    { name: 'queue', kind: 'integer', initial: 10, help: 'requests that may wait' },
    { name: 'maxDelay', kind: 'duration', initial: undefined, help: 'longest wait' },
  ],
};

/** A field's text as the factory wants it: integers and bare ms as numbers, flags as booleans. */
export function optionValue(field: OptionField, text: string): string | number | boolean | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  switch (field.kind) {
    case 'flag':
      return trimmed === 'true';
    case 'choice':
      return trimmed;
    default:
      // Left as text when it is not a number, so core reports it with the option's name.
      return /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(trimmed) ? Number(trimmed) : trimmed;
  }
}
