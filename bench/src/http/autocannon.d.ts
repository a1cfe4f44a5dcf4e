/** The part of autocannon 8's API the HTTP section uses (the package ships no types). */
declare module 'autocannon' {
  interface Histogram {
    readonly average: number;
    readonly p50: number;
    readonly p99: number;
    readonly max: number;
  }
  interface Options {
    url: string;
    connections?: number;
    pipelining?: number;
    /** Seconds (fractions allowed). */
    duration?: number;
    /** Sampling interval, ms; a run stops at a sample tick. @default 1000 */
    sampleInt?: number;
    /** Requests sent in turn on each connection; one with `setupRequest` is rebuilt every time it is sent. */
    requests?: readonly {
      setupRequest?: (request: { headers?: Record<string, string> }) => { headers?: Record<string, string> };
    }[];
  }
  interface Result {
    /** Seconds, measured. */
    readonly duration: number;
    readonly errors: number;
    readonly timeouts: number;
    readonly non2xx: number;
    readonly resets: number;
    readonly '2xx': number;
    /** Latency of 2xx responses, ms (whole milliseconds: an HDR histogram of integers). */
    readonly latency: Histogram;
    readonly requests: Histogram & { readonly total: number; readonly sent: number };
  }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
