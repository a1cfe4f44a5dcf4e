import { mulberry32 } from '../traffic.js';
/** A seeded uniform generator in [0, 1): the traffic simulator's mulberry32 (the same seed, the same run). */
export const seededRandom: (seed: number) => () => number = mulberry32;

/** A lognormal draw with this mean and log-space standard deviation `sigma` (Box–Muller). */
export function lognormal(random: () => number, mean: number, sigma: number): number {
  const u = 1 - random(); // (0, 1]: log(0) never happens
  const v = random();
  const normal = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  const mu = Math.log(mean) - (sigma * sigma) / 2;
  return Math.exp(mu + sigma * normal);
}

/** An exponential draw with this mean (Poisson arrivals' gaps). */
export function exponential(random: () => number, mean: number): number {
  return -Math.log(1 - random()) * mean;
}
