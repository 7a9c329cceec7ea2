// baton_v2_enqueue's reply, a flat array of 2N values (status, detail per task, in call order),
// as typed results.
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

/**
 * The results of one call for `taskIds` (in call order), from its flat reply of 2N values:
 * `status_1, detail_1, status_2, detail_2, ...`. Throws internal on a surprising reply.
 */
export function readEnqueueReply(reply: unknown, taskIds: readonly string[]): EnqueueResult[] {
  const n = taskIds.length;
  if (!Array.isArray(reply) || reply.length !== 2 * n) {
    const got = Array.isArray(reply) ? `${reply.length} values` : typeof reply;
    throw new BatonError('internal', `baton_v2_enqueue: expected a flat array of ${2 * n} values (status, detail per task), got ${got}`);
  }
  const results = new Array<EnqueueResult>(n);
  for (let i = 0; i < n; i++) {
    const taskId = taskIds[i] as string;
    const status = String(reply[2 * i]);
    const detail = reply[2 * i + 1] as unknown;
    switch (status) {
      case 'queued': results[i] = { status, taskId, streamId: String(detail) }; break;
      case 'scheduled': results[i] = { status, taskId, dueMs: Number(detail) }; break;
      case 'duplicate': results[i] = { status, taskId, state: String(detail) }; break;
      case 'unique_conflict': results[i] = { status, taskId, holderId: String(detail) }; break;
      default: throw new BatonError('internal', `baton_v2_enqueue: unknown status ${status} (task ${i + 1})`);
    }
  }
  return results;
}
