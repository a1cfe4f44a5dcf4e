import type { EnvOwner } from '@sluice/host/state';

/** The server's environment, as its errors name it, with what sluice-server 0.1 could leave behind. */
export const SERVER_ENV: EnvOwner = {
  option: 'dataDir',
  name: 'sluice-server',
  notDirectoryHint:
    'sluice-server 0.1 could leave its LMDB data file at the path itself when it had a dot in its name; that format is not read by this version',
  foreignEnvHint: "sluice-server 0.1's format 1",
};
