import { simulateAdaptive } from './src/sim/adaptive/adaptive-sim.ts';
const t0 = performance.now();
const r = simulateAdaptive();
console.log('ms', performance.now() - t0);
for (const lane of r.lanes) {
  const seg = (a: number[], from: number, to: number) => a.slice(from / 250, to / 250).filter((x) => !Number.isNaN(x));
  const med = (a: number[]) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
  const phases = [[0,10000],[10000,20000],[20000,30000],[30000,40000],[40000,50000],[50000,60000]];
  console.log(lane.kind, JSON.stringify(lane.totals), 'over', lane.overLimit);
  for (const [a,b] of phases) {
    const lim = seg(lane.limit, a, b); const g = seg(lane.goodput,a,b); const l = seg(lane.latency,a,b); const d = seg(lane.drops,a,b);
    console.log(`  ${a/1000}-${b/1000}s limit med ${med(lim)} min ${Math.min(...lim)} max ${Math.max(...lim)} goodput ${Math.round(g.reduce((x,y)=>x+y,0)/g.length)} lat ${Math.round(med(l))} drops ${Math.round(d.reduce((x,y)=>x+y,0)/d.length)}`);
  }
}
