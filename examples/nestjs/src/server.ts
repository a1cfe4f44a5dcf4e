import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { Controller, Get, HttpCode, Module, Post, Req } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { byIp, byToken, fixedWindow, RateLimit, RateLimitGuard, tokenBucket } from '@sluice/nestjs';
import type { Request } from 'express';

// tsx (esbuild) runs this without decorator syntax support for parameters, so Nest's decorators
// are applied as the functions they are; in a Nest project, write them as @Get(), @RateLimit()…
class AppController {
  hello(req: Request) {
    return { hello: 'world', remaining: req.rateLimit?.remaining };
  }
  login() {
    return { token: 'demo' };
  }
}
const method = (name: 'hello' | 'login') =>
  [AppController.prototype, name, Object.getOwnPropertyDescriptor(AppController.prototype, name)!] as const;
Get()(...method('hello'));
Req()(AppController.prototype, 'hello', 0);
Post('login')(...method('login'));
HttpCode(200)(...method('login'));
// This handler's own limit, on top of the global ones: 3 login attempts a minute per address.
RateLimit({ name: 'login', algorithm: fixedWindow({ limit: 3, window: '1m' }) })(...method('login'));
Controller()(AppController);

class AppModule {}
Module({ controllers: [AppController] })(AppModule);

const app = await NestFactory.create(AppModule, { logger: ['warn', 'error'] });
// Every route: 5 at once then 1 per second per address, and 1000 a day per bearer token.
app.useGlobalGuards(
  new RateLimitGuard({
    limits: [
      {
        name: 'burst',
        key: byIp(),
        algorithm: tokenBucket({ capacity: 5, refillAmount: 1, refillInterval: '1s' }),
      },
      { name: 'daily', key: byToken(), algorithm: fixedWindow({ limit: 1000, window: '1d' }) },
    ],
  }),
);
await app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1');
console.log(`listening on http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`);
const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
