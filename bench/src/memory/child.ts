/**
 * Heap bytes per key for one subject, in a fresh process started with --expose-gc: the keys are
 * created first (they are the caller's strings, shared by every subject), then one decision per
 * key, then `heapUsed` after a full GC minus `heapUsed` before, divided by the key count.
 *
 * usage: child.ts <subjectId> <keys>
 */
import { subject } from '../in-process/subjects.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');

function settle(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

async function main(): Promise<void> {
  const id = process.argv[2]!;
  const count = Number(process.argv[3]);
  const keys = Array.from({ length: count }, (_, i) => `user:${i}`);
  const s = subject(id, true);
  const before = settle();
  const { op, allowed, close } = s.make(count);
  let refused = 0;
  for (let i = 0; i < count; i++) {
    const result = op(keys[i]!);
    if (!allowed(s.async ? await result : result)) refused++;
  }
  const after = settle();
  // Keep the subject and the keys alive until after the measurement.
  const held = keys.length + (typeof op === 'function' ? 0 : 1);
  close?.();
  process.stdout.write(
    `${JSON.stringify({ id, keys: held, bytesPerKey: (after - before) / count, refused })}\n`,
  );
}

await main();
