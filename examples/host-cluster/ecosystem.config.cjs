// PM2 in cluster mode: 4 instances of server.ts behind one port, each opening the same host store,
// so the limit holds for the host as a whole (with the memory store, 4 instances admit 4 times the
// limit). PM2 owns the primary process here: no code of the app runs in it, and none needs to.
//   pnpm --filter @sluice/example-host-cluster run pm2   (foreground: pm2-runtime; or `pm2 start`)
module.exports = {
  apps: [
    {
      name: 'sluice-host-cluster',
      // server.ts run through tsx (pm2-instance.mjs); a built app names its compiled server.js here.
      script: 'src/pm2-instance.mjs',
      exec_mode: 'cluster',
      instances: Number(process.env.WORKERS ?? 4),
      env: {
        PORT: process.env.PORT ?? '3000',
        SLUICE_HOST_PATH: process.env.SLUICE_HOST_PATH ?? '/tmp/sluice-example-host-cluster',
      },
    },
  ],
};
