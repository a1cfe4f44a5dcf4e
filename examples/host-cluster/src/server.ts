import { HostStore } from '@sluice/host';
import { createApp, storePath } from './app.js';

// One worker: the process PM2 starts for each instance (ecosystem.config.cjs), and the one
// cluster.ts forks. PM2 and node:cluster share the port between the workers.
const store = new HostStore({ path: storePath() });
const port = Number(process.env.PORT ?? 3000);
const server = createApp(store).listen(port, '127.0.0.1', () => {
  const address = server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  process.send?.({ listening: bound });
  console.log(`worker ${process.pid} listening on http://127.0.0.1:${bound}`);
});
const stop = () => server.close(() => store.shutdown().then(() => process.exit(0)));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
