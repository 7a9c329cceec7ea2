package dev.baton;

import java.util.concurrent.atomic.LongAdder;

/** The live counters behind {@link WorkerStats}. */
final class Counters {
    final LongAdder succeeded = new LongAdder();
    final LongAdder failed = new LongAdder();
    final LongAdder retried = new LongAdder();
    final LongAdder dead = new LongAdder();
    final LongAdder timedOut = new LongAdder();
    final LongAdder malformed = new LongAdder();
    final LongAdder lost = new LongAdder();

    WorkerStats snapshot() {
        return new WorkerStats(succeeded.sum(), failed.sum(), retried.sum(), dead.sum(), timedOut.sum(),
                malformed.sum(), lost.sum());
    }
}
