import { ServerStore } from '@sluice/server';
import { afterAll } from 'vitest';
import { describeStoreBehaviour } from '../suites/store-behaviour.js';
import { startServer } from './harness.js';

const t = await startServer();
const client = await t.client();
afterAll(() => t.stop());

describeStoreBehaviour('ServerStore (sluice-server)', () => new ServerStore({ client }));
