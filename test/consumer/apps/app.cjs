// A CommonJS app: every package through its `require` entry point.
const core = require('@sluice/core');
const coreAdapter = require('@sluice/core/adapter');
const express = require('@sluice/express');
const fastify = require('@sluice/fastify');
const redis = require('@sluice/redis');
const Express = require('express');
const Fastify = require('fastify');
const { Redis } = require('ioredis');

import('./run.mjs')
  .then(({ run }) => run({ core, coreAdapter, redis, express, fastify, Express, Fastify, Redis }))
  .then((result) => console.log(JSON.stringify(result)))
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
