export type { ServerOptions } from './options.js';
export { SluiceServer, VERSION } from './server.js';
export type { Durability } from './state-db.js';
