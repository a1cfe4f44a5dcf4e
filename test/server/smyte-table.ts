import type { Redis } from 'ioredis';
import { redisCli } from './harness.js';

/**
 * Smyte's RL.* commands, case by case against smyte/ratelimit's code and tests
 * (RateLimitHandler.cpp, RateLimitHandlerTest.cpp, README). Each row is a command line and the
 * answer Smyte gives: an integer, or an error text. Rows of one group run in order on one key space.
 */
export type Row = readonly [command: string, answer: number | string];

const INVALID = 'Value is not an integer or out of range';
const SYNTAX = 'Syntax error';

export const TABLE: Record<string, readonly Row[]> = {
  // RateLimitHandlerTest GetReduceCommands, verbatim: seconds and milliseconds share a bucket,
  // a REDUCE that cannot be met drains it, STRICT holds it empty until a whole refill time passes.
  'GetReduceCommands (Smyte test)': [
    ['rl.reduce a 10 5 refill 3 at 2', 10],
    ['rl.preduce a 10 5000 at 2000 refill 3', 9],
    ['rl.get a 10 5 at 2 refill 3', 8],
    ['rl.pget a 10 5000 refill 3 at 2000', 8],
    ['rl.reduce a 10 5 at 2 refill 3 take 5', 8],
    ['rl.preduce a 10 5000 refill 3 take 5 at 2000', 3],
    ['rl.get a 10 5 at 2 refill 3', 0],
    ['rl.get a 10 5 at 8 refill 3', 3],
    ['rl.reduce a 10 5 at 8 take 2 refill 3', 3],
    ['rl.preduce a 10 5000 at 8000 refill 3', 1],
    ['rl.preduce a 10 5000 at 9000 refill 3', 0],
    ['rl.get a 10 5 at 13 refill 3', 3],
    ['rl.reduce a 10 5 at 14 refill 3 take 4 strict', 3],
    ['rl.reduce a 10 5 at 16 refill 3 take 4 strict', 0],
    ['rl.reduce a 10 5 at 18 refill 3 take 1 strict', 0],
    ['rl.reduce a 10 5 at 23 refill 3 take 2 strict', 3],
  ],
  // ParseRateLimitArgsWithErrors, plus the arity table (3..8 arguments for GET, 3..10 for REDUCE).
  'errors (Smyte test and handler table)': [
    ['rl.get abc 10 abc', INVALID],
    ['rl.pget abc 0 60', INVALID],
    ['rl.reduce abc 10 60 refill strict 1', INVALID],
    ['rl.pget abc 0 60 take 2', SYNTAX],
    ['rl.reduce abc 10 60 refill', SYNTAX],
    ['rl.preduce abc 10 60 refill 1 strict abc', SYNTAX],
    ['rl.reduce abc 10 60 bogus 1', SYNTAX],
    ['rl.reduce abc 10 60 bogus x', INVALID],
    ['rl.reduce abc 10 60 take -1', INVALID],
    ['rl.reduce abc 10 60 at -1', INVALID],
    ['rl.reduce abc 10 60 refill 0', INVALID],
    ['rl.reduce abc 10 0', INVALID],
    ['rl.reduce abc -1 60', INVALID],
    ['rl.reduce abc 1.5 60', INVALID],
    ['rl.get abc 10 2147483648', INVALID],
    ['rl.get abc 10 -2147483649', INVALID],
    ['rl.get abc 10 99999999999999', INVALID],
    ['rl.reduce abc 10 60 take 9223372036854775807 at 9007199254740993', INVALID],
    ['rl.reduce abc 10 60 at 9223372036854775808', INVALID],
    ['rl.get abc 10', "Wrong number of arguments for 'rl.get' command"],
    ['rl.get abc 10 60 refill 1 at 1 strict x', "Wrong number of arguments for 'rl.get' command"],
    [
      'rl.reduce abc 10 60 refill 1 take 1 at 1 strict x',
      "Wrong number of arguments for 'rl.reduce' command",
    ],
    ['rl.preduce abc', "Wrong number of arguments for 'rl.preduce' command"],
  ],
  'options: any order, any case, defaults (ParseRateLimitArgsWithOutErrors)': [
    ['RL.REDUCE p 10 500 REFILL 5 take 2 at 1005', 10],
    ['rl.pget p 10 500000 at 1005000 refill 5', 8],
    ['Rl.PReduce p 10 500000 At 1005000 TaKe 3 rEfIlL 5', 8],
    // REFILL defaults to max: one refill time later the bucket is full again.
    ['rl.preduce q 20 700 at 3005 take 15', 20],
    ['rl.pget q 20 700 at 3705', 20],
    // TAKE defaults to 1 for REDUCE; GET takes nothing.
    ['rl.preduce r 3 1000 at 0', 3],
    ['rl.pget r 3 1000 at 0', 2],
    ['rl.pget r 3 1000 at 0', 2],
  ],
  // folly::to reads a sign and leading zeros, at every length (short ones skip the BigInt).
  'integers as folly::to reads them': [
    ['rl.preduce i +3 0001000 at -0', 3],
    ['rl.pget i 3 1000 at 000000000000000', 2],
    ['rl.pget i 000000000000003 2147483647 at 0', 3],
    ['rl.preduce i 3 1000 take +000000000000002 at 0', 2],
    ['rl.pget i 3 1000 at 999', 0],
    ['rl.pget i 3 1000 at 1000', 3],
    ['rl.pget j 999999999999999 1 at 0', 999999999999999],
    ['rl.pget j 9007199254740991 1 at 0', 9007199254740991],
    ['rl.pget j 9007199254740992 1 at 0', INVALID],
  ],
  'a REDUCE that cannot be met still writes max(amount - take, 0)': [
    ['rl.preduce d 10 1000 take 4 at 0', 10],
    ['rl.preduce d 10 1000 take 8 at 0', 6],
    ['rl.pget d 10 1000 at 0', 0],
    // more than the bucket can ever hold: the reply is what was there, the bucket is emptied
    ['rl.preduce e 5 1000 take 7 at 0', 5],
    ['rl.pget e 5 1000 at 0', 0],
    // TAKE 0 reads and writes nothing
    ['rl.preduce z 5 1000 take 0 at 0', 5],
    ['rl.preduce z 5 1000 take 2 at 0', 5],
    ['rl.preduce z 5 1000 take 0 at 0', 3],
  ],
  'STRICT restarts the clock whenever the bucket is left empty, even by an admitted request': [
    ['rl.preduce s 2 1000 at 0 strict', 2],
    ['rl.preduce s 2 1000 at 500 strict', 1],
    ['rl.pget s 2 1000 at 1000', 0],
    ['rl.pget s 2 1000 at 1499', 0],
    ['rl.pget s 2 1000 at 1500', 2],
    // the same trace without STRICT refills at 1000
    ['rl.preduce n 2 1000 at 0', 2],
    ['rl.preduce n 2 1000 at 500', 1],
    ['rl.pget n 2 1000 at 1000', 2],
  ],
  'refills come by whole refill times, and a client time earlier than the last refill refills nothing': [
    ['rl.preduce w 10 1000 refill 2 take 9 at 0', 10],
    ['rl.pget w 10 1000 refill 2 at 999', 1],
    ['rl.pget w 10 1000 refill 2 at 1000', 3],
    ['rl.pget w 10 1000 refill 2 at 2999', 5],
    ['rl.preduce w 10 1000 refill 2 at 2500', 5],
    ['rl.pget w 10 1000 refill 2 at 100', 4],
    ['rl.pget w 10 1000 refill 2 at 3000', 6],
  ],
  'the parameters are part of the key': [
    ['rl.preduce k 2 1000 at 0', 2],
    ['rl.preduce k 2 1000 at 0', 1],
    ['rl.preduce k 3 1000 at 0', 3],
    ['rl.preduce k 2 1000 refill 1 at 0', 2],
    ['rl.preduce k 2 2000 at 0', 2],
    ['rl.preduce k 2 1000 at 0', 0],
  ],
};

/**
 * Smyte advances the refill mark by whole refill times even while the bucket is full
 * (adjustAmount); core's stepped bucket follows that rule (issue 11, 3.6).
 */
export const FULL_BUCKET_KEEPS_PROGRESS: readonly Row[] = [
  ['rl.preduce f 5 1000 refill 2 at 0', 5],
  ['rl.preduce f 5 1000 refill 2 take 4 at 1500', 5],
  ['rl.pget f 5 1000 refill 2 at 2000', 3],
];

function words(command: string, prefix: string): string[] {
  const parts = command.split(' ');
  // Each run gets its own keys, so the ioredis and redis-cli passes do not see each other's buckets.
  parts[1] = `${prefix}${parts[1]}`;
  return parts;
}

export async function viaIoredis(client: Redis, command: string, prefix: string): Promise<number | string> {
  const [name, ...args] = words(command, prefix);
  try {
    return (await client.call(name!, ...args)) as number;
  } catch (err) {
    return (err as Error).message;
  }
}

export async function viaCli(port: number, command: string, prefix: string): Promise<number | string> {
  const out = await redisCli(port, words(command, prefix));
  return /^-?[0-9]+$/.test(out) ? Number(out) : out;
}
