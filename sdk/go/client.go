package baton

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// Client is the producer: it enqueues tasks (now, delayed, at a time, idempotent) and cancels
// them. In a namespace spread over partitions (docs/cluster.md, "Partitions") each task goes to
// the partition of its id; the Client reads each namespace's partition count at its first use
// and again when its copy is older than 5 s (an enqueue whose read fails fails as unavailable).
// It is safe for concurrent use; it holds a pool of Redis connections, each of which checked the
// functions library version when it connected.
type Client struct {
	rdb          redis.UniversalClient // *redis.Client, or *redis.ClusterClient (redis+cluster://)
	tracer       trace.Tracer          // nil without WithTracerProvider
	queues       sync.Map              // "ns\x00type" -> *queue
	waitReplicas int                   // WaitReplicas: WAIT after each enqueue call when > 0
	waitTimeout  time.Duration
	partitions   *partitionCounts // each namespace's partition count, read every 5 s
}

// queueOf returns the (cached) keys and enqueue batcher of a queue; ns is a storage namespace
// (a partition: NS or "NS:p").
func (c *Client) queueOf(ns, taskType string) *queue {
	id := ns + "\x00" + taskType
	if q, ok := c.queues.Load(id); ok {
		return q.(*queue)
	}
	q, _ := c.queues.LoadOrStore(id, &queue{keys: newKeySet(ns, taskType)})
	return q.(*queue)
}

// Outcome is what an enqueue did with a task.
type Outcome string

// The outcomes of an enqueue.
const (
	// Queued: the task is in its work stream now.
	Queued Outcome = "queued"
	// Scheduled: the task waits for its due time in the scheduled set.
	Scheduled Outcome = "scheduled"
	// Duplicate: the id is live, or finished within the namespace's done_retention_s; nothing
	// was written.
	Duplicate Outcome = "duplicate"
	// UniqueConflict: another task holds the unique key; nothing was written.
	UniqueConflict Outcome = "unique_conflict"
)

// EnqueueResult says what happened to one task.
type EnqueueResult struct {
	// TaskID is the task's id (the given one, or the UUIDv7 the SDK made).
	TaskID string
	// Outcome is Queued, Scheduled, Duplicate or UniqueConflict.
	Outcome Outcome
	// StreamID is the work stream entry (Queued).
	StreamID string
	// Due is when the task becomes runnable, on the Redis server's clock (Scheduled).
	Due time.Time
	// State is the existing task's state, e.g. "queued", "done" (Duplicate).
	State string
	// Holder is the id of the task that holds the unique key (UniqueConflict).
	Holder string
}

// Request is one task of EnqueueMany.
type Request struct {
	// Namespace and Type select the queue.
	Namespace, Type string
	// Payload is a JSON object: []byte or json.RawMessage are taken as JSON text byte for byte,
	// any other value is marshalled with encoding/json.
	Payload any
	// Options are the task's EnqueueOptions.
	Options []EnqueueOption
}

// enqueueCallLimit is the most tasks one baton_v2_enqueue call carries (as the C++ client).
const enqueueCallLimit = 256

// NewClient connects to redisURL ("redis://[user:password@]host:port[/db]", "rediss://...",
// "unix:///path", or the seed nodes of a Redis Cluster,
// "redis+cluster://[user:password@]host:port[,host:port...]") and checks the functions library
// version (on a cluster: on every primary). Errors: invalid_argument (a bad URL or option),
// unavailable (Redis cannot be reached), version_mismatch ("... run 'baton init'").
func NewClient(ctx context.Context, redisURL string, opts ...ClientOption) (*Client, error) {
	var cfg clientConfig
	for _, o := range opts {
		o.applyClient(&cfg)
	}
	rdb, err := newRedis(redisURL, cfg.redisOptions, 0)
	if err != nil {
		return nil, err
	}
	if err := checkWait(&cfg, rdb); err != nil {
		_ = rdb.Close()
		return nil, err
	}
	// The first connection runs the version check (OnConnect).
	if err := pingAll(ctx, rdb); err != nil {
		_ = rdb.Close()
		return nil, fromRedis("connect", err)
	}
	logger := cfg.logger
	if logger == nil {
		logger = slog.New(discardHandler{})
	}
	c := &Client{rdb: rdb, waitReplicas: cfg.waitReplicas, waitTimeout: cfg.waitTimeout,
		partitions: newPartitionCounts(rdb, logger)}
	if cfg.tracerProvider != nil {
		c.tracer = cfg.tracerProvider.Tracer(instrumentationName)
	}
	return c, nil
}

// Close closes the Client's connections.
func (c *Client) Close() error { return c.rdb.Close() }

// Redis returns the Client's go-redis client (for reads of state the SDK has no call for); nil
// for a redis+cluster:// URL: see RedisUniversal.
func (c *Client) Redis() *redis.Client {
	r, _ := c.rdb.(*redis.Client)
	return r
}

// RedisUniversal returns the Client's go-redis client: a *redis.ClusterClient for a
// redis+cluster:// URL, else the *redis.Client of Redis.
func (c *Client) RedisUniversal() redis.UniversalClient { return c.rdb }

// Enqueue validates one task and enqueues it. payload is a JSON object ([]byte and
// json.RawMessage are taken as JSON text byte for byte; any other value is marshalled). Invalid
// input is an *Error with code invalid_argument naming the field, and nothing is written. A
// duplicate id or a held unique key is not an error: see EnqueueResult.Outcome. Concurrent
// Enqueue calls for the same (namespace, type) share baton_v2_enqueue calls: a task waits only
// while a call of its queue is in flight, then goes with the others that arrived meanwhile.
//
// ctx: when it has ended, nothing is written and the error wraps ctx.Err() (it is not an
// *Error). A task waiting for its call is withdrawn when ctx ends; a call carrying only this
// task ends at ctx's deadline or cancellation, and then its outcome is unknown (unavailable):
// retry with the same TaskID. A call shared with other callers is not cut short by this ctx.
//
// With WaitReplicas, a WAIT that fell short returns the result and an unavailable error ("written
// on the primary but acknowledged by only K of N replicas within T ms"): the task may still run.
func (c *Client) Enqueue(ctx context.Context, ns, taskType string, payload any, opts ...EnqueueOption) (*EnqueueResult, error) {
	req := Request{Namespace: ns, Type: taskType, Payload: payload, Options: opts}
	ctx, end := c.startProducerSpan(ctx, []Request{req})
	p := &prepared{}
	if err := prepare(ctx, &req, time.Now().Unix(), p); err != nil {
		err.Op = "enqueue"
		end(err)
		return nil, err
	}
	counts, perr := c.partitions.get(ctx, []string{ns})
	if perr != nil {
		err := fromRedis("enqueue", perr)
		end(err)
		return nil, err
	}
	storage := StorageNamespace(ns, PartitionOf(p.task.ID, counts[ns]))
	r, err := c.queueOf(storage, taskType).submit(ctx, c, p)
	end(err)
	if err != nil && r.TaskID == "" {
		return nil, err
	}
	return &r, err
}

// EnqueueMany enqueues many tasks, batched per (namespace, type) and pipelined in one round
// trip (in a partitioned namespace, per partition and type: see PartitionOf); the results are in
// request order. Every request is validated first: one invalid request
// fails the call ("enqueue requests[3]: invalid_argument: max_retry: ...") and nothing is
// written. If a call fails on the way (unavailable) some tasks may have been written and no
// results come back: set TaskID on every request if you want to retry safely (the written ones
// then come back as Duplicate); ids the SDK generated are lost with the error. ctx is honoured
// as by Enqueue (an ended ctx writes nothing). With WaitReplicas, a WAIT that fell short
// returns the results and an unavailable error (every task was written on its primary).
func (c *Client) EnqueueMany(ctx context.Context, requests []Request) ([]EnqueueResult, error) {
	return c.enqueue(ctx, "enqueue", requests)
}

// prepared is one validated task and its enqueue arguments.
type prepared struct {
	task      Task
	runAtMs   int64
	uniqueKey string
	uniqueTTL int64
}

func (c *Client) enqueue(ctx context.Context, op string, requests []Request) ([]EnqueueResult, error) {
	if len(requests) == 0 {
		return nil, nil
	}
	ctx, end := c.startProducerSpan(ctx, requests)
	now := time.Now().Unix()
	tasks := make([]prepared, len(requests))
	for i := range requests {
		if err := prepare(ctx, &requests[i], now, &tasks[i]); err != nil {
			reqOp := op
			if len(requests) > 1 {
				reqOp = op + " requests[" + strconv.Itoa(i) + "]"
			}
			err.Op = reqOp
			end(err)
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		end(err)
		return nil, contextError(op, err) // nothing written
	}
	namespaces := make([]string, len(tasks))
	for i := range tasks {
		namespaces[i] = tasks[i].task.Namespace
	}
	counts, perr := c.partitions.get(ctx, namespaces)
	if perr != nil {
		err := fromRedis(op, perr)
		end(err)
		return nil, err
	}
	// Group by (storage namespace, type), keeping request order inside each group: each task in
	// the partition of its id.
	type group struct {
		keys    *keySet
		indexes []int
	}
	var groups []*group
	byQueue := map[[2]string]*group{}
	for i := range tasks {
		t := &tasks[i].task
		q := [2]string{StorageNamespace(t.Namespace, PartitionOf(t.ID, counts[t.Namespace])), t.Type}
		g := byQueue[q]
		if g == nil {
			g = &group{keys: c.queueOf(q[0], q[1]).keys}
			byQueue[q] = g
			groups = append(groups, g)
		}
		g.indexes = append(g.indexes, i)
	}
	type call struct {
		cmd     *redis.Cmd
		indexes []int
		short   *Error // WaitReplicas: the WAIT after it fell short
	}
	var calls []call
	// One call goes straight to the connection; several share one pipeline (one round trip).
	// With WaitReplicas, each node's calls share a pipeline that ends with WAIT.
	var target redis.Cmdable = c.rdb
	var pipe redis.Pipeliner
	var durable []*durableCall
	if c.waitReplicas == 0 && (len(groups) > 1 || len(groups[0].indexes) > enqueueCallLimit) {
		pipe = c.rdb.Pipeline()
		target = pipe
	}
	for _, g := range groups {
		for start := 0; start < len(g.indexes); start += enqueueCallLimit {
			idx := g.indexes[start:min(start+enqueueCallLimit, len(g.indexes))]
			batch := make([]*prepared, len(idx))
			for j, i := range idx {
				batch[j] = &tasks[i]
			}
			if c.waitReplicas > 0 {
				keys := g.keys
				durable = append(durable, &durableCall{key: keys.stream, build: func(t redis.Cmdable) *redis.Cmd {
					return enqueueCall(ctx, t, keys, batch)
				}})
				calls = append(calls, call{indexes: idx})
				continue
			}
			calls = append(calls, call{cmd: enqueueCall(ctx, target, g.keys, batch), indexes: idx})
		}
	}
	if durable != nil {
		c.sendDurable(ctx, op, durable)
		for i := range calls {
			calls[i].cmd, calls[i].short = durable[i].cmd, durable[i].short
		}
	}
	if pipe != nil {
		if err := execPipeline(ctx, pipe); err != nil {
			end(err)
			return nil, fromRedis(op, err)
		}
	}
	results := make([]EnqueueResult, len(requests))
	var short *Error
	for _, cl := range calls {
		if err := cl.cmd.Err(); err != nil {
			end(err)
			return nil, fromRedis(op, err)
		}
		if cl.short != nil && short == nil {
			short = cl.short
		}
		reply, err := enqueueReply(op, cl.cmd.Val(), len(cl.indexes))
		if err != nil {
			end(err)
			return nil, err
		}
		for j, i := range cl.indexes {
			r, err := enqueueResult(tasks[i].task.ID, reply[2*j], reply[2*j+1])
			if err != nil {
				err.Op = op
				end(err)
				return nil, err
			}
			results[i] = r
		}
	}
	if short != nil {
		end(short)
		return results, short
	}
	end(nil)
	return results, nil
}

// prepare applies the options of one request and validates the task, in the contract's order.
func prepare(ctx context.Context, r *Request, now int64, out *prepared) *Error {
	s := enqueueSettings{maxRetry: DefaultMaxRetry}
	for _, o := range r.Options {
		o(&s)
	}
	t := &out.task
	t.Namespace, t.Type = r.Namespace, r.Type
	t.ID = s.taskID
	if t.ID == "" {
		t.ID = NewTaskID()
	}
	payload, err := payloadText(r.Payload)
	if err != nil {
		return err
	}
	t.Payload = payload
	t.MaxRetry = s.maxRetry
	t.DelaySeconds = ceilSeconds(s.delay)
	t.CreatedAt = now
	if s.timeout != 0 {
		t.ExecutionTimeout = int(max(min(ceilSeconds(s.timeout), math.MaxInt32), math.MinInt32))
	}
	if s.extraErr != nil {
		return s.extraErr
	}
	t.Extra = s.extra
	if !s.explicitTrace {
		if tc := traceFromContext(ctx); tc != nil {
			if t.Extra == nil {
				t.Extra = map[string]json.RawMessage{}
			}
			t.Extra["trace"] = tc
		}
	}
	if err := t.validate(false); err != nil {
		return err
	}
	if !s.at.IsZero() {
		out.runAtMs = s.at.UnixMilli()
		if out.runAtMs <= 0 {
			return invalid("at", "must be after 1970-01-01 (got "+s.at.String()+")")
		}
	}
	if s.uniqueKey != "" || s.uniqueTTL != 0 {
		if s.uniqueKey == "" {
			return invalid("unique_key", "must not be empty")
		}
		if s.uniqueTTL < time.Second {
			return invalid("unique_ttl", "must be at least 1s (got "+s.uniqueTTL.String()+")")
		}
		if strings.ContainsAny(s.uniqueKey, "{}") {
			return invalid("unique_key", "must not contain '{' or '}' (got "+truncate(strconv.Quote(s.uniqueKey))+")")
		}
		out.uniqueKey, out.uniqueTTL = s.uniqueKey, ceilSeconds(s.uniqueTTL)
	}
	return nil
}

// payloadText is the payload's JSON text: raw bytes as given, other values marshalled.
func payloadText(payload any) (json.RawMessage, *Error) {
	switch p := payload.(type) {
	case json.RawMessage:
		return p, nil
	case []byte:
		return p, nil
	case nil:
		return nil, invalid("payload", "required")
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, invalid("payload", "cannot be encoded as JSON: "+err.Error())
	}
	return b, nil
}

// ceilSeconds is d in whole seconds, rounded away from zero (the contract counts seconds): a
// fraction of a second is never lost, and a negative duration stays negative, so validation
// refuses it rather than taking it as 0 (no delay, no timeout).
func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	switch r := d % time.Second; {
	case r > 0:
		s++
	case r < 0:
		s--
	}
	return s
}

// enqueueCall queues one baton_v2_enqueue call for tasks of one (namespace, type) on target.
func enqueueCall(ctx context.Context, target redis.Cmdable, keys *keySet, tasks []*prepared) *redis.Cmd {
	items := make([]enqueueItem, len(tasks))
	var uniqueKeys []string
	for j, p := range tasks {
		items[j] = p.item()
		if p.uniqueKey != "" {
			uniqueKeys = append(uniqueKeys, keys.uniquePrefix+p.uniqueKey)
		}
	}
	return fcallEnqueue(ctx, target, keys, uniqueKeys, len(items), items)
}

// item is the task's 10 per-item values of baton_v2_enqueue.
func (p *prepared) item() enqueueItem {
	t := &p.task
	timeout := ""
	if t.ExecutionTimeout != 0 {
		timeout = strconv.Itoa(t.ExecutionTimeout)
	}
	return enqueueItem{
		ID:               t.ID,
		Payload:          []byte(t.Payload),
		MaxRetry:         t.MaxRetry,
		DelaySeconds:     t.DelaySeconds,
		CreatedAt:        t.CreatedAt,
		ExecutionTimeout: timeout,
		Extra:            extraText(t.Extra),
		RunAtMs:          p.runAtMs,
		UniqueKey:        p.uniqueKey,
		UniqueTTLS:       p.uniqueTTL,
	}
}

// enqueueReply checks the shape of a baton_v2_enqueue reply for n tasks: a flat array of 2n
// values, status and detail of each task in call order (not n nested pairs).
func enqueueReply(op string, reply any, n int) ([]any, *Error) {
	v, ok := reply.([]any)
	if !ok || len(v) != 2*n {
		return nil, errorf(op, "baton_v2_enqueue: unexpected reply %v", reply)
	}
	return v, nil
}

// enqueueResult decodes the status and detail of one task in a baton_v2_enqueue reply.
func enqueueResult(id string, statusValue, detail any) (EnqueueResult, *Error) {
	r := EnqueueResult{TaskID: id}
	status, _ := statusValue.(string)
	r.Outcome = Outcome(status)
	switch r.Outcome {
	case Queued:
		r.StreamID = fmt.Sprint(detail)
	case Scheduled:
		ms, ok := detail.(int64)
		if !ok {
			return r, errorf("", "baton_v2_enqueue: due time %v is not an integer", detail)
		}
		r.Due = time.UnixMilli(ms)
	case Duplicate:
		r.State = fmt.Sprint(detail)
	case UniqueConflict:
		r.Holder = fmt.Sprint(detail)
	default:
		return r, errorf("", "baton_v2_enqueue: unknown status %q", status)
	}
	return r, nil
}

// Cancel cancels a task that has not started: queued, scheduled or waiting to retry. Errors:
// not_found (no such live task), conflict (it is running or dead), invalid_argument. In a
// partitioned namespace it looks in the id's partition first, then in the others (the task may
// have been enqueued before the namespace grew). It reads the partition count afresh (one HMGET).
func (c *Client) Cancel(ctx context.Context, ns, taskID string) error {
	if err := checkName("namespace", ns); err != nil {
		err.Op = "cancel"
		return err
	}
	if err := checkTaskID(taskID); err != nil {
		err.Op = "cancel"
		return err
	}
	// The count is read now, not taken from the 5 s copy: a task enqueued to a partition added a
	// moment ago must still be found.
	count, err := c.partitions.readNow(ctx, ns)
	if err != nil {
		return fromRedis("cancel", err)
	}
	home := PartitionOf(taskID, count)
	for i := 0; i < count; i++ {
		p := i
		switch {
		case i == 0:
			p = home
		case i <= home:
			p = i - 1
		}
		storage := StorageNamespace(ns, p)
		record, err := c.rdb.HGet(ctx, newKeySet(storage, "").tasks, taskID).Result()
		if err == redis.Nil {
			continue
		}
		if err != nil {
			return fromRedis("cancel", err)
		}
		parts := strings.SplitN(record, "|", 4)
		if len(parts) < 2 {
			return errorf("cancel", "task record %q is malformed", record)
		}
		return fromRedis("cancel", fcallCancel(ctx, c.rdb, newKeySet(storage, parts[1]), taskID).Err())
	}
	return &Error{Op: "cancel", Code: CodeNotFound, Message: "no live task " + taskID + " in namespace " + ns}
}
