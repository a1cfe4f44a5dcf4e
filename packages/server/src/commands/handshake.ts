import { timingSafeEqual } from 'node:crypto';
import * as resp from '../resp.js';
import type { Command, CommandContext } from './context.js';

/**
 * The connection commands Redis clients send on their own (redis-cli, ioredis, node-redis,
 * redis-py, go-redis): enough for them to connect, authenticate, name the connection and check
 * readiness. HELLO is refused, so every client falls back to RESP2.
 */

function sameSecret(given: Buffer, expected: string): boolean {
  const a = Buffer.from(expected);
  // Compare in constant time; a length difference is allowed to show.
  return given.length === a.length && timingSafeEqual(given, a);
}

function auth(args: readonly Buffer[], ctx: CommandContext): resp.Reply {
  if (ctx.requirePass === undefined) {
    return resp.error(
      'ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?',
    );
  }
  // AUTH password, or AUTH default password (Redis 6 ACL form, only the default user exists).
  const user = args.length === 3 ? args[1]!.toString() : 'default';
  const password = args[args.length - 1]!;
  if (user !== 'default' || !sameSecret(password, ctx.requirePass)) {
    ctx.session.authenticated = false;
    return resp.error('WRONGPASS invalid username-password pair or user is disabled.');
  }
  ctx.session.authenticated = true;
  return resp.OK;
}

/**
 * HELLO [protover [AUTH user pass] [SETNAME name]]: RESP3 is refused (NOPROTO), so RESP3 clients
 * fall back to RESP2; HELLO 2 (node-redis sends it) answers as Redis does, with AUTH and SETNAME.
 */
function hello(args: readonly Buffer[], ctx: CommandContext): resp.Reply {
  if (args.length > 1 && args[1]!.toString() !== '2') {
    return resp.error('NOPROTO sorry, this protocol version is not supported');
  }
  for (let i = 2; i < args.length; ) {
    const option = args[i]!.toString().toLowerCase();
    if (option === 'auth' && i + 2 < args.length) {
      const answer = auth([args[0]!, args[i + 1]!, args[i + 2]!], ctx);
      if (answer !== resp.OK) return answer;
      i += 3;
    } else if (option === 'setname' && i + 1 < args.length) {
      ctx.session.name = args[i + 1]!.toString();
      i += 2;
    } else return resp.error(`ERR Syntax error in HELLO option '${option}'`);
  }
  if (!ctx.session.authenticated)
    return resp.error(
      'NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time',
    );
  return resp.array([
    resp.bulk('server'),
    resp.bulk('sluice'),
    resp.bulk('version'),
    resp.bulk(ctx.version),
    resp.bulk('proto'),
    resp.integer(2),
    resp.bulk('id'),
    resp.integer(ctx.session.id),
    resp.bulk('mode'),
    resp.bulk('standalone'),
    resp.bulk('role'),
    resp.bulk('master'),
    resp.bulk('modules'),
    resp.array([]),
  ]);
}

function info(args: readonly Buffer[], ctx: CommandContext): resp.Reply {
  const s = ctx.stats;
  const uptime = Math.floor((Date.now() - s.startedAt) / 1000);
  const lines = [
    '# Server',
    `sluice_server_version:${ctx.version}`,
    // Clients read redis_version to pick protocol features; these commands are Redis 7's.
    'redis_version:7.0.0',
    'redis_mode:standalone',
    `process_id:${process.pid}`,
    `tcp_port:${ctx.port}`,
    `uptime_in_seconds:${uptime}`,
    `worker:${ctx.worker}`,
    '',
    '# Clients',
    `connected_clients:${s.connections}`,
    '',
    '# Persistence',
    'loading:0',
    `keys_stored:${ctx.db.count()}`,
    `shards:${ctx.db.shardCount}`,
    `transaction_ms:${Math.round(ctx.db.transactionMs)}`,
    `swept_keys:${s.sweptKeys}`,
    '',
    '# Stats',
    `total_connections_received:${s.totalConnections}`,
    `rejected_connections:${s.rejectedConnections}`,
    `total_commands_processed:${s.commands}`,
    `protocol_errors:${s.protocolErrors}`,
    `paused_for_backpressure:${s.pausedForBackpressure}`,
    `max_commands_per_turn:${s.maxCommandsPerTurn}`,
    '',
    // As Redis reports them: seconds of CPU this process (this worker) has used.
    '# CPU',
    `used_cpu_sys:${(process.cpuUsage().system / 1e6).toFixed(6)}`,
    `used_cpu_user:${(process.cpuUsage().user / 1e6).toFixed(6)}`,
    '',
  ];
  void args;
  return resp.bulk(lines.join('\r\n'));
}

export const handshakeCommands: Record<string, Command> = {
  ping: {
    arity: [0, 1],
    run: (args) => (args.length === 2 ? resp.bulk(args[1]!) : resp.simple('PONG')),
  },
  echo: { arity: [1, 1], run: (args) => resp.bulk(args[1]!) },
  quit: {
    arity: [0, -1],
    beforeAuth: true,
    run: (_args, ctx) => {
      ctx.session.closing = true;
      return resp.OK;
    },
  },
  hello: { arity: [0, 6], beforeAuth: true, run: hello },
  auth: { arity: [1, 2], beforeAuth: true, run: auth },
  select: {
    arity: [1, 1],
    run: (args) => (args[1]!.toString() === '0' ? resp.OK : resp.error('ERR DB index is out of range')),
  },
  client: {
    arity: [1, -1],
    run: (args, ctx) => {
      const sub = args[1]!.toString().toLowerCase();
      if (sub === 'setname' && args.length === 3) {
        const name = args[2]!.toString();
        if (/[\s]/.test(name))
          return resp.error('ERR Client names cannot contain spaces, newlines or special characters.');
        ctx.session.name = name === '' ? undefined : name;
        return resp.OK;
      }
      if (sub === 'getname' && args.length === 2) {
        return ctx.session.name === undefined ? resp.NIL : resp.bulk(ctx.session.name);
      }
      if (sub === 'id' && args.length === 2) return resp.integer(ctx.session.id);
      // node-redis sends CLIENT SETINFO lib-name / lib-ver; accepted and ignored, as Redis keeps them for CLIENT LIST only.
      if (sub === 'setinfo' && args.length === 4) return resp.OK;
      return resp.error(`ERR unknown subcommand or wrong number of arguments for 'client|${sub}' command`);
    },
  },
  command: {
    arity: [0, -1],
    run: (args, ctx) => {
      const sub = args.length > 1 ? args[1]!.toString().toLowerCase() : '';
      if (sub === 'count') return resp.integer(ctx.commandNames().length);
      // redis-cli asks COMMAND DOCS for its hints; no docs means no hints, which it accepts.
      if (sub === 'docs') return resp.array([]);
      if (sub === '')
        return resp.array(
          ctx
            .commandNames()
            .map((name) =>
              resp.array([
                resp.bulk(name),
                resp.integer(-1),
                resp.array([]),
                resp.integer(0),
                resp.integer(0),
                resp.integer(0),
              ]),
            ),
        );
      return resp.error(`ERR unknown subcommand '${sub}'. Try COMMAND HELP.`);
    },
  },
  info: { arity: [0, -1], run: info },
  // redis-benchmark and some tools read CONFIG GET (save, appendonly...): nothing is configurable
  // through it, so every pattern matches no parameter.
  config: {
    arity: [1, -1],
    run: (args) =>
      args[1]!.toString().toLowerCase() === 'get'
        ? resp.array([])
        : resp.error('ERR CONFIG is not supported, except CONFIG GET (which reports no parameters)'),
  },
};
