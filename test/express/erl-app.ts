/** The Express app the fromExpressRateLimit tests put a limiter in front of. */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import supertest from 'supertest';

/** An app with `limiter` in front of `/` (200), `/fail` (400) and an error handler that says what reached it. */
export function app(limiter: RequestHandler, before?: RequestHandler): express.Express {
  const a = express();
  if (before !== undefined) a.use(before);
  a.use(limiter);
  a.get('/', (_req, res) => {
    res.send('ok');
  });
  a.get('/fail', (_req, res) => {
    res.sendStatus(400);
  });
  a.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
    res.status(500).send(`app error handler: ${error.message}`);
  });
  return a;
}

/** The statuses of `n` GETs of `path`, one after the other. */
export async function statuses(served: express.Express, path: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await supertest(served).get(path)).status);
  return out;
}
