// redis+cluster://[user:password@]host:port[,host:port...]: the seed nodes of a Redis Cluster.
// The rules and their wording follow the C++ core (src/broker/redis_endpoint.cpp); errors name
// redis_url and never echo the password.
import { invalidArgument } from './baton_error.js';

export const CLUSTER_SCHEME = 'redis+cluster://';
const SHAPE = '(redis+cluster://host:port[,host:port...])';

export interface ClusterSeed {
  readonly host: string;
  readonly port: number;
}

export interface ClusterUrl {
  readonly seeds: readonly ClusterSeed[];
  readonly username?: string;
  readonly password?: string;
}

export function isClusterUrl(url: string): boolean {
  return url.startsWith(CLUSTER_SCHEME);
}

const urlError = (rule: string) => invalidArgument('redis_url', rule);

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw urlError("user and password must be percent-encoded (bad '%' escape)");
  }
}

/** "host[:port]" or "[v6]:port" (port 6379 when absent, as the C++ core); the rule broken, or the seed. */
function parseSeed(text: string): ClusterSeed | string {
  let host: string;
  let port = '';
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return "unterminated IPv6 address '['";
    host = text.slice(1, close);
    const after = text.slice(close + 1);
    if (after !== '') {
      if (!after.startsWith(':')) return "expected ':port' after the IPv6 address";
      port = after.slice(1);
    }
  } else {
    const colon = text.lastIndexOf(':');
    host = colon < 0 ? text : text.slice(0, colon);
    if (colon >= 0) port = text.slice(colon + 1);
  }
  if (host === '') return 'missing host';
  if (port === '') return { host, port: 6379 };
  const n = /^[0-9]{1,5}$/.test(port) ? Number(port) : NaN;
  if (!(n >= 1 && n <= 65535)) return `port must be 1..65535 (got '${port}')`;
  return { host, port: n };
}

/** Parses a redis+cluster:// URL; throws invalid_argument (field redis_url) naming the rule. */
export function parseClusterUrl(url: string): ClusterUrl {
  if (!isClusterUrl(url)) throw urlError(`a cluster URL starts with ${CLUSTER_SCHEME} ${SHAPE}`);
  let rest = url.slice(CLUSTER_SCHEME.length);
  if (rest.includes('/')) throw urlError('redis+cluster:// takes no /db (a cluster has only db 0)');
  if (rest.includes('?')) throw urlError(`redis+cluster:// takes no ?options ${SHAPE}`);
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const userinfo = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = userinfo.indexOf(':');
    const user = decode(colon < 0 ? userinfo : userinfo.slice(0, colon));
    if (user !== '') username = user;
    if (colon >= 0) password = decode(userinfo.slice(colon + 1));
  }
  const seeds = rest.split(',').map((text, i) => {
    const seed = parseSeed(text);
    if (typeof seed === 'string') throw urlError(`seed ${i + 1}: ${seed} ${SHAPE}`);
    return seed;
  });
  return { seeds, ...(username !== undefined ? { username } : {}), ...(password !== undefined ? { password } : {}) };
}
