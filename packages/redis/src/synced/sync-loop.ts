import type { CallGate } from '@sluice/core/gate';
import type { ScriptCommand } from '../script-command.js';
import { applyReply, buildBatch, type SyncGroup } from './sync-batch.js';
import type { SyncQueue } from './sync-queue.js';

/**
 * The sync loop of a `SyncedStore`: every `interval` (or when asked) one cycle sends what this node
 * consumed on each queued key (one script per hash slot) and brings back the fleet's state. A
 * batch whose reply was lost is sent again, as it is, before anything new; while one is lost the
 * store is in an outage (its decisions use `outageShare` of each limit).
 */
export class SyncLoop {
  /**
   * The time of the latest decision: a batch's keys expire relative to it, so states written at
   * a caller's `now` (replays, tests) live their life in that time, not in the clock's.
   */
  latest: number | undefined;
  /** Groups whose reply was lost: sent again, with their number, before anything new. */
  private resend: SyncGroup[] = [];
  private seq = 0;
  private running: Promise<void> | undefined;
  private following: Promise<void> | undefined;
  private readonly timer: ReturnType<typeof setInterval> | undefined;

  /**
   * @param interval ms between cycles; 0: no timer (`sync()` only)
   * @param ackBase the node's ack key (a hash tag follows it on a Cluster)
   */
  constructor(
    interval: number,
    private readonly queue: SyncQueue,
    private readonly gate: CallGate,
    private readonly command: ScriptCommand,
    private readonly clock: () => number,
    private readonly ackBase: string,
    private readonly cluster: boolean,
  ) {
    if (interval > 0) {
      this.timer = setInterval(() => {
        if (this.running === undefined) void this.sync();
      }, interval);
      this.timer.unref?.();
    }
  }

  /** True while the last sync failed (its batch waits to be sent again). */
  get outage(): boolean {
    return this.resend.length > 0;
  }

  /** Whether something waits to be sent: a lost batch, or queued keys. */
  get unsent(): boolean {
    return this.resend.length > 0 || this.queue.length > 0;
  }

  /**
   * One sync cycle: sends what this node consumed since the last one (or, after a failure, the
   * lost batch again) and reads the fleet's state back, for the keys used in the last two cycles
   * (a key idle longer is pulled by the cycle after its next use). Never rejects: a failure is reported to
   * `onError` (`operation: 'sync'`) and the batch is sent again next cycle. A call while a cycle
   * runs waits for the next one (shared by every caller meanwhile), so what was consumed before
   * the call is sent by the time it resolves, if Redis answers.
   */
  sync(): Promise<void> {
    if (this.following !== undefined) return this.following;
    if (this.running === undefined) return this.start();
    const following = this.running.then(() => {
      this.following = undefined;
      return this.start();
    });
    this.following = following;
    return following;
  }

  /** Stops the timer (a cycle in flight goes on). */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }

  private start(): Promise<void> {
    const running = this.cycle().finally(() => {
      this.running = undefined;
    });
    this.running = running;
    return running;
  }

  private async cycle(): Promise<void> {
    const queue = this.queue;
    queue.reportDropped();
    let groups = this.resend;
    if (groups.length === 0) {
      if (queue.length === 0) return;
      const at = this.latest ?? this.clock();
      groups = buildBatch(queue.take(), queue.requeue, ++this.seq, at, this.ackBase, this.cluster);
    }
    const lost: SyncGroup[] = [];
    await Promise.all(
      groups.map((group) =>
        this.gate.map(
          'sync',
          group.entries.length,
          () => this.command(group.keys.length, ...group.keys, ...group.args),
          (reply) => applyReply(group, reply),
          () => {
            lost.push(group);
          },
        ),
      ),
    );
    this.resend = lost;
    // Entries used meanwhile were queued again if they were not already in this batch.
    if (lost.length > 0) for (const group of lost) for (const entry of group.entries) queue.add(entry);
  }
}
