import { randomUUID } from 'node:crypto';
import { ServerStore } from '@sluice/server';
import { afterAll } from 'vitest';
import { storeSubjects } from '../adapters/subjects.js';
import { adapterSuite } from '../adapters/suite.js';
import { startServer } from './harness.js';

// The adapter behaviour suite (Express and Fastify) with ServerStore on a sluice-server, as it
// runs on Redis: each store its own key prefix, the fake clock driving the decisions' time.
const t = await startServer();
const client = await t.client();
afterAll(() => t.stop());

const makeStore = (clock: () => number) =>
  new ServerStore({ client, clock, prefix: `adapters:${randomUUID()}:` });
for (const subject of storeSubjects)
  adapterSuite({ ...subject, name: `${subject.name} on sluice-server` }, makeStore, false);
