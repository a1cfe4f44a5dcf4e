import { ErrorCode } from '@sluice/core';
import { describeValue, MAX_TIME } from '@sluice/core/adapter';
import * as resp from './resp.js';

/** A number as JavaScript writes one (`String(now)`: `1e-7` too), without spaces around it. */
const NUMBER = /^[0-9.eE+-]+$/;

/**
 * The error for an `AT` argument that is not a time core accepts (ms since the epoch, 0 to
 * `MAX_TIME`, 2^42: past it the arithmetic loses units), with core's code and message
 * (`assertTime`); `undefined` when `value` is one.
 */
export function timeError(text: string | undefined, value: number): resp.Reply | undefined {
  if (text !== undefined && NUMBER.test(text) && value >= 0 && value <= MAX_TIME) return undefined;
  return resp.error(
    `${ErrorCode.INVALID_TIME} now must be ms since the epoch, from 0 to ${MAX_TIME} (2109-05-15); got ${text === undefined ? 'nothing' : describeValue(text)}`,
  );
}
