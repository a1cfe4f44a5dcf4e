// What PM2 starts in each instance. PM2 on Node < 22.18 runs no TypeScript itself: this registers
// tsx, then runs the worker's source. A built app points `script` at its compiled server.js instead.
import { register } from 'tsx/esm/api';

register();
await import('./server.ts');
