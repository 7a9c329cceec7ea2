// One concurrency limit shared by the fetch loops of a type's partitions (docs/cluster.md,
// "Partitions"), used for threaded types: their concurrency is a fixed number of threads, so the
// partitions must not fetch more tasks than there are threads (a task waiting for a thread would
// spend its execution_timeout queued). A loop reserves slots before it asks Redis for tasks and
// gives back what it did not get; each finished task gives back its slot and wakes the others.
export class SharedSlots {
  private used = 0;
  private readonly waiters = new Set<() => void>();

  constructor(readonly limit: number) {}

  /** Slots neither reserved nor held by a running task. */
  get free(): number {
    return this.limit - this.used;
  }

  reserve(n: number): void {
    this.used += n;
  }

  release(n: number): void {
    if (n <= 0) return;
    this.used -= n;
    for (const wake of this.waiters) wake();
  }

  /** Calls `wake` whenever slots are released; returns the unsubscribe function. */
  subscribe(wake: () => void): () => void {
    this.waiters.add(wake);
    return () => this.waiters.delete(wake);
  }
}
