// A RESP load generator for sluice-server's scaling bench (scale.sh): CONNS connections, each
// keeping PIPELINE `RL.REDUCE` commands in flight on random keys out of KEYS, for SECONDS.
// Adapted from the issue-36 measuring script (../shared/server-scale/loadgen.mjs), so that figures
// stay comparable with the issue's table: same command, same key spread, same reply counting.
// usage: node resp-load.mjs PORT SECONDS CONNS PIPELINE KEYS -> "replies N errors E rate R/s"
import net from 'node:net';

const [port, secs, conns, pipe, nkeys] = process.argv.slice(2).map(Number);
const enc = (args) =>
  `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
let replies = 0;
let errors = 0;
let stop = false;
const t0 = Date.now();
const one = () =>
  new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.setNoDelay(true);
    let inflight = 0;
    let buf = '';
    const send = (n) => {
      let out = '';
      for (let i = 0; i < n; i++)
        out += enc(['RL.REDUCE', `k${Math.floor(Math.random() * nkeys)}`, '1000000000', '60']);
      inflight += n;
      s.write(out);
    };
    s.on('connect', () => send(pipe));
    s.on('data', (d) => {
      buf += d.toString('latin1');
      let n = 0;
      let i = buf.indexOf('\r\n');
      while (i >= 0) {
        if (buf[0] === '-') errors++;
        buf = buf.slice(i + 2);
        n++;
        i = buf.indexOf('\r\n');
      }
      replies += n;
      inflight -= n;
      if (stop) {
        if (inflight === 0) {
          s.end();
          resolve();
        }
        return;
      }
      if (inflight === 0) send(pipe);
    });
    s.on('error', () => {
      errors++;
      resolve();
    });
    s.on('close', resolve);
  });
setTimeout(() => {
  stop = true;
}, secs * 1000);
await Promise.all(Array.from({ length: conns }, one));
const el = (Date.now() - t0) / 1000;
console.log(`replies ${replies} errors ${errors} rate ${(replies / el).toFixed(0)}/s`);
process.exit(0);
