package dev.baton;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Merges concurrent single-task {@code enqueue} calls of one (namespace, type) into shared
 * {@code baton_v2_enqueue} calls: while a call of a queue is in flight, the tasks that arrive
 * wait, and the first of them then sends all waiting ones (up to {@link BatonClient#BATCH}) in
 * one call per partition of the namespace; each caller gets the outcome (or error) of its own
 * task's call. A lone caller is never delayed (it sends at once), so this only batches under
 * concurrency. One Redis call of one task costs Redis several times the CPU per task of a call
 * of many, so producers with many threads gain most.
 */
final class EnqueueCoalescer {
    private final Function<List<TaskRequest>, List<BatonClient.Sent>> call;
    private final Map<String, Lane> lanes = new ConcurrentHashMap<>();

    EnqueueCoalescer(Function<List<TaskRequest>, List<BatonClient.Sent>> call) {
        this.call = call;
    }

    EnqueueResult enqueue(TaskRequest r) {
        return lanes.computeIfAbsent(r.namespace() + "\u0000" + r.taskType(), k -> new Lane()).submit(r);
    }

    /** One waiting task: its outcome, and the signal that it is its turn to send the next call. */
    private record Pending(TaskRequest request, CompletableFuture<EnqueueResult> result,
                           CompletableFuture<Void> turn) {}

    /** The waiting tasks of one queue; {@code busy} while one of them is sending a call. */
    private final class Lane {
        private final ArrayDeque<Pending> waiting = new ArrayDeque<>();
        private boolean busy;

        EnqueueResult submit(TaskRequest r) {
            Pending me = new Pending(r, new CompletableFuture<>(), new CompletableFuture<>());
            boolean lead;
            synchronized (this) {
                waiting.add(me);
                lead = !busy;
                busy = true;
            }
            if (!lead) {
                try {
                    CompletableFuture.anyOf(me.result(), me.turn()).join();
                } catch (CompletionException e) {
                    // our task's call failed while we waited: thrown below as the error itself
                }
            }
            if (!me.result().isDone()) {
                send(); // our turn: we are at the head of the queue, so in this call
            }
            try {
                return me.result().join();
            } catch (CompletionException e) {
                throw e.getCause() instanceof RuntimeException re ? re : e;
            }
        }

        /** Sends one call with the waiting tasks (the sender's own first), then hands over. */
        private void send() {
            List<Pending> batch = new ArrayList<>();
            synchronized (this) {
                while (!waiting.isEmpty() && batch.size() < BatonClient.BATCH) {
                    batch.add(waiting.poll());
                }
            }
            try {
                complete(batch);
            } finally {
                synchronized (this) {
                    Pending next = waiting.peek();
                    if (next == null) {
                        busy = false;
                    } else {
                        next.turn().complete(null);
                    }
                }
            }
        }

        /** Sends the batch; each caller gets the outcome of its own task's call. */
        private void complete(List<Pending> batch) {
            try {
                List<BatonClient.Sent> out = call.apply(batch.stream().map(Pending::request).toList());
                List<Pending> retry = new ArrayList<>();
                for (int i = 0; i < batch.size(); i++) {
                    BatonClient.Sent s = out.get(i);
                    CompletableFuture<EnqueueResult> result = batch.get(i).result();
                    if (s.error() == null && s.notDurable() == null) {
                        result.complete(s.result());
                    } else if (s.error() == null) { // written, WAIT short: its own outcome with the error
                        result.completeExceptionally(new NotDurableException(s.notDurable(), List.of(s.result())));
                    } else if (s.error().code() == ErrorCode.INVALID_ARGUMENT && s.callSize() > 1) {
                        retry.add(batch.get(i)); // one task of its call was refused (nothing written): who?
                    } else {
                        result.completeExceptionally(s.error());
                    }
                }
                for (Pending p : retry) {
                    complete(List.of(p));
                }
            } catch (RuntimeException | Error e) { // never leave a waiting caller hanging
                batch.forEach(p -> p.result().completeExceptionally(e));
            }
        }
    }
}
