import type { EnvOwner } from '@sluice/host/state';

/** The server's environment, as its errors name it. */
export const SERVER_ENV: EnvOwner = { option: 'dataDir', name: 'sluice-server' };
