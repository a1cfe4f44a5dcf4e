/**
 * The worker utilization load shedder's control law, as pure functions of (state, signal, now):
 * no clock, no timer, no randomness, so tests and the ramp picture drive it directly.
 *
 * One number carries the whole controller: `pressure`, in ms, within `[-delay, ramp]`.
 *
 * - Each step credits the time since the previous step, `dt = clamp(now - at, 0, maxStep)`, and
 *   reads the signal `u` (0–1, the utilization over that interval):
 *   - `u >= bad`: pressure rises by `dt` (1 ms per ms);
 *   - `good <= u < bad` (the dead zone): pressure holds;
 *   - `u < good`: pressure falls by `dt × ramp / recovery` (so a full shed drains in `recovery`);
 *   - a signal that is not a finite number counts as the dead zone: no information, no change.
 * - Pressure rests at `-delay`: overload must last `delay` before it reaches 0, and only above 0
 *   is anything shed. After recovery it sinks back to `-delay`, re-arming the delay.
 * - The shed level is `s = P × max(0, pressure) / ramp` in `[0, P]`, where `P` is the number of
 *   sheddable priorities (all but the most important). The k-th least important priority
 *   (k = 0, 1, …) drops a request with probability `clamp(s - k, 0, 1)`: the least important one
 *   rises from 0 to 1 first, then the next; after `delay + ramp` of overload everything but the
 *   most important priority is dropped. The most important priority is never dropped.
 *
 * Nothing moves in a jump: one step changes each drop probability by at most
 * `P × maxStep × max(1, ramp / recovery) / ramp`.
 *
 * Stripe's sketch scales the rates by how far `u` is past a threshold; here they are constant, so
 * `delay`, `ramp` and `recovery` are the times a user configures, whatever the overload's depth.
 */

/** The controller's parameters, validated by the shedder. Times in ms. */
export interface ControllerParams {
  /** Below it, utilization is good and pressure drains. In (0, bad]. */
  readonly good: number;
  /** At or above it, utilization is bad and pressure builds. In [good, 1]. */
  readonly bad: number;
  /** ms of overload before anything is shed. ≥ 0. */
  readonly delay: number;
  /** ms of overload, after the delay, to go from shedding nothing to shedding every sheddable priority. > 0. */
  readonly ramp: number;
  /** ms of good utilization to go from shedding everything sheddable back to nothing. > 0. */
  readonly recovery: number;
  /** Most ms one step may credit: a stalled sampler moves the level by no more than this. > 0. */
  readonly maxStep: number;
  /** Sheddable priorities: all but the most important. ≥ 1. */
  readonly sheddable: number;
}

/** The controller's whole state: a plain, serialisable pair. */
export interface ControllerState {
  /** Net ms of overload, within `[-delay, ramp]`; shedding happens above 0. */
  readonly pressure: number;
  /** ms of the last step; the next step credits the time since. */
  readonly at: number;
}

/** At rest: the full delay ahead. */
export function restingState(params: ControllerParams, now: number): ControllerState {
  return { pressure: -params.delay, at: now };
}

/** One control step: the state after `signal` was observed over the interval ending at `now`. */
export function controlStep(
  state: ControllerState,
  signal: number,
  now: number,
  params: ControllerParams,
): ControllerState {
  const dt = Math.min(Math.max(now - state.at, 0), params.maxStep);
  let pressure = state.pressure;
  if (signal >= params.bad) pressure += dt;
  else if (signal < params.good) pressure -= (dt * params.ramp) / params.recovery;
  // Anything else (the dead zone, NaN) holds.
  pressure = Math.min(Math.max(pressure, -params.delay), params.ramp);
  return { pressure, at: Math.max(now, state.at) };
}

/** The shed level `s` in `[0, P]`. */
export function shedLevel(state: ControllerState, params: ControllerParams): number {
  return state.pressure <= 0 ? 0 : (params.sheddable * state.pressure) / params.ramp;
}

/**
 * Drop probability of each priority, most important first (index 0 is always 0).
 */
export function dropProbabilities(state: ControllerState, params: ControllerParams): number[] {
  const level = shedLevel(state, params);
  const out = [0];
  for (let i = 1; i <= params.sheddable; i++) {
    const k = params.sheddable - i; // 0 for the least important
    out.push(Math.min(Math.max(level - k, 0), 1));
  }
  return out;
}
