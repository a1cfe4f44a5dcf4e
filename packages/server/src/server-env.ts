import type { EnvOwner } from '@sluice/host/state';

/** The server's environment, as its errors name it. */
export const SERVER_ENV: EnvOwner = { option: 'dataDir', name: 'sluice-server' };

/**
 * Address space reserved for the map (not disk: the file grows with the pages used). Fixed and
 * large, so that no process has to remap while others hold the environment open.
 */
export const MAP_SIZE = 2 ** 36;
