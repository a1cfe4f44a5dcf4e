import { createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on a loopback port in front of a server (Redis), that can delay every chunk in both
 * directions: a slow network or a loaded server, as the client sees it. Order is kept (every chunk
 * waits the same delay, and timers of one delay fire in order).
 */
export interface DelayProxy {
  readonly port: number;
  /** ms added to every chunk from now on; 0: straight through. */
  delay: number;
  close(): Promise<void>;
}

export async function startDelayProxy(target: number): Promise<DelayProxy> {
  const sockets = new Set<Socket>();
  const proxy = {
    port: 0,
    delay: 0,
    close: (): Promise<void> =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => {
      const ms = proxy.delay;
      if (ms === 0) to.write(chunk);
      else setTimeout(() => to.writable && to.write(chunk), ms);
    });
    from.on('close', () => to.destroy());
    from.on('error', () => to.destroy());
  };
  const server: Server = createServer((client) => {
    const upstream = new (client.constructor as typeof Socket)();
    upstream.connect(target, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    }
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  proxy.port = typeof address === 'object' && address !== null ? address.port : 0;
  return proxy;
}
