// baton_v2_enqueue's reply, one [status, detail] pair per task, as typed results.
import { BatonError } from './baton_error.js';

/** queued: in the work stream now (streamId is its entry). */
export interface QueuedResult { readonly status: 'queued'; readonly taskId: string; readonly streamId: string }
/** scheduled: delayed, due at dueMs (Unix ms, Redis clock). */
export interface ScheduledResult { readonly status: 'scheduled'; readonly taskId: string; readonly dueMs: number }
/** duplicate: the id is live, or finished within the retention; nothing written. state: where it is. */
export interface DuplicateResult { readonly status: 'duplicate'; readonly taskId: string; readonly state: string }
/** unique_conflict: another live task (holderId) holds the unique key; nothing written. */
export interface UniqueConflictResult { readonly status: 'unique_conflict'; readonly taskId: string; readonly holderId: string }

export type EnqueueResult = QueuedResult | ScheduledResult | DuplicateResult | UniqueConflictResult;
export type EnqueueStatus = EnqueueResult['status'];

/** The results of one call for `taskIds` (in call order). Throws internal on a surprising reply. */
export function readEnqueueReply(reply: unknown, taskIds: readonly string[]): EnqueueResult[] {
  if (!Array.isArray(reply) || reply.length !== taskIds.length) {
    throw new BatonError('internal', `baton_v2_enqueue: expected an array of ${taskIds.length} [status, detail] pairs`);
  }
  return reply.map((pair: unknown, i): EnqueueResult => {
    const taskId = taskIds[i] as string;
    if (!Array.isArray(pair) || pair.length !== 2) throw new BatonError('internal', 'baton_v2_enqueue: malformed pair');
    const status = String(pair[0]);
    const detail = pair[1] as unknown;
    switch (status) {
      case 'queued': return { status, taskId, streamId: String(detail) };
      case 'scheduled': return { status, taskId, dueMs: Number(detail) };
      case 'duplicate': return { status, taskId, state: String(detail) };
      case 'unique_conflict': return { status, taskId, holderId: String(detail) };
      default: throw new BatonError('internal', `baton_v2_enqueue: unknown status ${status}`);
    }
  });
}
