import { createServer, type Server, Socket } from 'node:net';

/**
 * A TCP proxy on a loopback port in front of a server (Redis), that can delay every chunk: a slow
 * network or a loaded server, as the client sees it. Order is kept (every chunk of one direction
 * waits the same delay, and timers of one delay fire in order).
 */
export interface DelayProxy {
  readonly port: number;
  /** ms added to every chunk, both ways, from now on; 0: straight through. */
  delay: number;
  /**
   * From the next chunk the server sends (a reply), every chunk the client sends is held `ms`:
   * the next command after a reply is late, with no race against the test's own timing.
   */
  holdRequestsAfterNextReply(ms: number): void;
  close(): Promise<void>;
}

export async function startDelayProxy(target: number): Promise<DelayProxy> {
  const sockets = new Set<Socket>();
  let requestDelay = 0;
  let armed: number | undefined;
  const proxy = {
    port: 0,
    delay: 0,
    holdRequestsAfterNextReply(ms: number) {
      armed = ms;
    },
    close: (): Promise<void> =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  const forward = (from: Socket, to: Socket, requests: boolean) => {
    from.on('data', (chunk) => {
      if (!requests && armed !== undefined) {
        requestDelay = armed;
        armed = undefined;
      }
      const ms = proxy.delay + (requests ? requestDelay : 0);
      if (ms === 0) to.write(chunk);
      else setTimeout(() => to.writable && to.write(chunk), ms);
    });
    from.on('close', () => to.destroy());
    from.on('error', () => to.destroy());
  };
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    upstream.connect(target, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    }
    forward(client, upstream, true);
    forward(upstream, client, false);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  proxy.port = typeof address === 'object' && address !== null ? address.port : 0;
  return proxy;
}
