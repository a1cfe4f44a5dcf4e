// An ES module app: every package through its `import` entry point.
import * as core from '@sluice/core';
import * as coreAdapter from '@sluice/core/adapter';
import * as express from '@sluice/express';
import * as fastify from '@sluice/fastify';
import * as redis from '@sluice/redis';
import Express from 'express';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { run } from './run.mjs';

console.log(
  JSON.stringify(await run({ core, coreAdapter, redis, express, fastify, Express, Fastify, Redis })),
);
