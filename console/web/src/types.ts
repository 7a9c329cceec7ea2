// The JSON shapes the console's API answers (docs/console.md, docs/collector-openapi.yaml,
// src/inspect/inspector_json.cpp). Every field is read defensively: the server is the authority.

export type Role = "viewer" | "operator" | "admin";

export interface Session {
  user: string;
  role: Role;
  csrf: string;
  read_only: boolean;
  can_act: boolean;
  can_bulk: boolean;
  can_audit: boolean;
}

// --- collector (store) shapes ------------------------------------------------------------------

export interface Rollup {
  enqueued: number;
  started: number;
  succeeded: number;
  failed: number;
  dead: number;
  reclaimed: number;
  cancelled: number;
  replayed: number;
  deleted: number;
  dropped: number;
  runs: number;
  mean_run_ms: number | null;
  p50_run_ms?: number;
  p95_run_ms?: number;
  p99_run_ms?: number;
  success_rate: number | null;
}

export interface RatesPerMinute {
  enqueued: number;
  started: number;
  succeeded: number;
  failed: number;
}

export interface QueueSample {
  sampled_at_ms: number;
  ready: number;
  in_flight: number;
  delayed: number;
  retrying: number;
  dead: number;
  consumers: number;
  live_consumers: number;
}

export interface TypeOverview {
  per_minute_5m?: RatesPerMinute;
  last_hour?: Rollup;
  queue?: QueueSample;
}

export interface NamespaceOverview {
  namespace: string;
  types: Record<string, TypeOverview>;
  events_lost: number;
  events_lost_last_detected_ms?: number;
  today: Rollup;
  complete: boolean;
}

export interface Overview {
  now_ms: number;
  day: string;
  namespaces: NamespaceOverview[];
}

export interface SeriesPoint extends Rollup {
  minute_ms: number;
}

export interface Series {
  namespace: string;
  type: string;
  from_ms: number;
  to_ms: number;
  points: SeriesPoint[];
}

export interface DailyRow extends Rollup {
  namespace: string;
  day: string;
}

export interface Daily {
  from_day: string;
  days: DailyRow[];
}

export interface TimelineEvent {
  at_ms: number;
  entry_id: string;
  from: string;
  to: string;
  attempt: number;
  worker: string;
  language?: string;
  host?: string;
  error?: string;
  kind?: string;
  stack?: string;
}

export interface Attempt {
  attempt: number;
  worker: string;
  language?: string;
  started_ms: number | null;
  ended_ms: number | null;
  outcome: string | null;
  run_ms?: number;
}

export interface Timeline {
  task_id: string;
  namespace: string;
  type: string;
  state: string;
  complete: boolean;
  events: TimelineEvent[];
  attempts: Attempt[];
}

// A dead task as the store's search answers it (GET /api/dead).
export interface StoreDeadTask {
  namespace: string;
  task_id: string;
  type: string;
  attempt: number;
  died_at_ms: number;
  error: string;
  worker: string;
  stack?: string;
  kind?: string;
}

export interface DeadList {
  tasks: StoreDeadTask[];
  limit: number;
  offset: number;
}

export interface WorkerQueue {
  namespace: string;
  type: string;
}

export interface Worker {
  name: string;
  language: string;
  host: string;
  service: string;
  first_seen_ms: number;
  last_seen_ms: number;
  pending: number;
  started: number;
  succeeded: number;
  failed: number;
  queues: WorkerQueue[];
}

export interface Workers {
  window_ms: number;
  by_language: Record<string, number>;
  workers: Worker[];
}

// --- Redis (Inspector) shapes ------------------------------------------------------------------

export interface QueueRates {
  window_ms: number;
  done: number;
  failed: number;
  queued: number;
  started: number;
  dropped: number;
  exact: boolean;
}

export interface QueueInfo {
  namespace: string;
  type: string;
  stream_length: number;
  ready: number;
  ready_exact: boolean;
  in_flight: number;
  leased: number;
  expired_leases: number;
  delayed: number;
  retrying: number;
  scheduled_split_exact: boolean;
  dead: number;
  consumers: number;
  live_consumers: number;
  oldest_age_ms: number | null;
  rate: QueueRates;
}

export interface LiveEvent {
  event_id: string;
  at_ms: number;
  from: string;
  to: string;
  attempt: number;
  worker: string;
  error: string;
}

export interface TaskErrorRecord {
  attempt: number;
  kind: string;
  error: string;
  stack: string;
  worker: string;
  at_ms: number;
}

export interface TaskBody {
  payload: unknown;
  max_retry: unknown;
  delay_seconds: unknown;
  created_at: unknown;
  execution_timeout: unknown;
  extra: unknown;
  attempt?: unknown;
  raw?: Record<string, string>;
}

export interface TaskInfo {
  namespace: string;
  task_id: string;
  type: string;
  state: string;
  attempts: number;
  stream_id: string | null;
  lease_deadline_ms: number | null;
  due_ms: number | null;
  dead_since_ms: number | null;
  finished_ms: number | null;
  finished_by: string;
  body: TaskBody | null;
  errors: TaskErrorRecord[];
  events: LiveEvent[];
  events_complete: boolean;
  now_ms: number;
}

export interface TaskAnswer {
  ns: string;
  id: string;
  live: TaskInfo | null;
  timeline: Timeline | null;
}

// A dead task as the Inspector lists it (the bulk preview's sample).
export interface InspectorDeadTask {
  task_id: string;
  type: string;
  dead_since_ms: number;
  attempts: number;
  kind: string;
  last_error: string;
}

export interface DeadPreview {
  matched: number;
  sample: InspectorDeadTask[];
}

export interface DeadBatchResult {
  matched: number;
  succeeded: number;
  failed: { task_id: string; error: string }[];
}

export interface Verdict {
  code: string;
  severity: string;
  message: string;
  facts: Record<string, unknown>;
}

export interface QueueDiagnosis {
  queue: QueueInfo;
  findings: Verdict[];
}

export interface LiveSnapshot {
  now_ms: number;
  namespaces: { ns: string; queues: QueueInfo[] }[];
  workers: Workers | null;
  error?: string;
}

// --- cron and audit ----------------------------------------------------------------------------

export interface CronLast {
  task_id: string;
  state: string;
  updated_ms: number;
}

export interface CronJob {
  name: string;
  schedule: string;
  timezone: string;
  ns?: string;
  namespace?: string;
  task_type: string;
  payload: unknown;
  max_retry: number;
  enabled: boolean;
  missed: string;
  execution_timeout: number | null;
  next: number[];
  last: CronLast[];
}

export interface CronUnreadable {
  name: string;
  definition: string;
  error: string;
}

export interface CronList {
  jobs: CronJob[];
  unreadable: CronUnreadable[];
}

export interface AuditEntry {
  at_ms: number;
  user: string;
  role: string;
  action: string;
  ns: string;
  target: string;
  task_ids: unknown;
  outcome: string;
  detail: unknown;
  remote?: string;
}

export interface AuditList {
  entries: AuditEntry[];
}
