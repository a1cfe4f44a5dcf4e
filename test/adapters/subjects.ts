// The adapter subjects the suites run on: one real framework server each (subjects/*.ts).
import express5, { type Express } from 'express';
import express4 from 'express4';
import type { Subject } from './harness.js';
import { expressSubject } from './subjects/express.js';
import { fastifySubject } from './subjects/fastify.js';
import { honoSubject } from './subjects/hono.js';
import { koaSubject } from './subjects/koa.js';
import { nestSubject } from './subjects/nestjs.js';

export const subjects: readonly Subject[] = [
  expressSubject('express 5', () => express5()),
  expressSubject('express 4', () => express4() as unknown as Express),
  fastifySubject,
  honoSubject,
  koaSubject,
  nestSubject('express'),
  nestSubject('fastify'),
];

/**
 * The subjects that carry the suites onto more stores (Redis Cluster, sluice-server): Express 5's
 * middleware chain and Fastify's hooks with route config. An adapter never sees which store it
 * talks to (core's HttpLimiter calls the Store contract): every subject runs the suites on a
 * synchronous store (MemoryStore) and an asynchronous one (RedisStore on one Redis), and each
 * store's own behaviour is proved by the store suites; these two prove the wiring end to end.
 */
export const storeSubjects: readonly Subject[] = subjects.filter((subject) =>
  ['express 5', 'fastify 5'].includes(subject.name),
);
