// A real Redis Cluster (3 primaries, 3 replicas of redis-server on free loopback ports) from the
// shared harness tests/harness/redis_cluster.py, run as a subprocess: it prints one JSON line
// once the cluster is ready (library loaded) and stops every node when its stdin closes.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { REPO_ROOT } from './paths.js';

export interface ClusterNode {
  readonly port: number;
  readonly role: 'primary' | 'replica';
  readonly pid: number;
}

export class RedisClusterHarness {
  private constructor(private readonly child: ChildProcess, readonly url: string, readonly nodes: readonly ClusterNode[]) {}

  static async start(timeoutMs = 45000): Promise<RedisClusterHarness> {
    const child = spawn('/usr/bin/python3', [join(REPO_ROOT, 'tests', 'harness', 'redis_cluster.py'), '--load-library'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const first = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis cluster harness not ready within ${timeoutMs} ms`)), timeoutMs);
      lines.once('line', (line) => {
        clearTimeout(timer);
        resolve(line);
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis cluster harness exited with ${String(code)}`));
      });
    });
    const described = JSON.parse(first) as { url: string; nodes: ClusterNode[] };
    return new RedisClusterHarness(child, described.url, described.nodes);
  }

  get primaries(): ClusterNode[] {
    return this.nodes.filter((n) => n.role === 'primary');
  }

  /** An ioredis Cluster client of the test itself (default settings). */
  client(): Cluster {
    return new Cluster(this.primaries.map((n) => ({ host: '127.0.0.1', port: n.port })));
  }

  /** A plain connection to one node. */
  node(port: number): Redis {
    return new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  }

  /** Closes the harness' stdin: it kills every node and removes their directories. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin?.end();
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10000).unref())]);
  }
}
