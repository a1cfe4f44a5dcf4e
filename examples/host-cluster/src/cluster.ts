import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';

// The primary forks one worker per core (WORKERS to change); each runs server.ts. The primary
// decides nothing and opens no store: every worker decides in its own process, exactly, over the
// shared host store. A worker that dies is replaced; its limits' state is on disk, nothing is lost.
if (cluster.isPrimary) {
  const count = Number(process.env.WORKERS ?? availableParallelism());
  let listening = 0;
  let stopping = false;
  const fork = () => {
    const worker = cluster.fork();
    worker.on('message', (message: { listening?: number }) => {
      if (message.listening !== undefined && ++listening === count) {
        console.log(`${count} workers listening on http://127.0.0.1:${message.listening}`);
      }
    });
  };
  for (let i = 0; i < count; i++) fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    console.warn(`worker ${worker.process.pid} died (${signal ?? code}); starting another`);
    fork();
  });
  const stop = () => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} else {
  await import('./server.js');
}
