package baton

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// blockWaiter sleeps in XREAD BLOCK on one stream, on a connection of its own, for a runner
// whose stream was empty at its last dequeue. XREAD (not XREADGROUP) only watches: it returns
// when an entry newer than the given id exists or the block ends, and takes nothing. Because
// it waits on its own goroutine and connection, the runner keeps sending acks of tasks that
// finish meanwhile. Shutdown wakes it with CLIENT UNBLOCK. On a cluster the connection is one
// of the node that holds the stream (looked up again after a connection error: a failover).
type blockWaiter struct {
	rdb      redis.UniversalClient
	node     atomic.Pointer[redis.Client] // the client conn came from (CLIENT UNBLOCK goes there)
	stream   string
	block    time.Duration
	req      chan string   // the id to wait after; closed to end the loop
	res      chan error    // one answer per request
	done     chan struct{} // closed once loop ended and closed its connection
	conn     *redis.Conn
	clientID atomic.Int64 // CLIENT ID of conn (0: none yet)
	blocked  atomic.Bool
}

func newBlockWaiter(rdb redis.UniversalClient, stream string, block time.Duration) *blockWaiter {
	return &blockWaiter{rdb: rdb, stream: stream, block: max(block, time.Millisecond),
		req: make(chan string), res: make(chan error, 1), done: make(chan struct{})}
}

// loop serves requests until req is closed, then closes its connection.
func (b *blockWaiter) loop() {
	defer close(b.done)
	for lastID := range b.req {
		b.res <- b.wait(lastID)
	}
	if b.conn != nil {
		_ = b.conn.Close()
	}
}

func (b *blockWaiter) wait(lastID string) error {
	ctx := context.Background()
	if b.conn == nil {
		node, err := nodeFor(ctx, b.rdb, b.stream)
		if err != nil {
			return err
		}
		b.node.Store(node)
		b.conn = node.Conn()
		id, err := b.conn.ClientID(ctx).Result()
		if err != nil {
			_ = b.conn.Close()
			b.conn = nil
			return err
		}
		b.clientID.Store(id)
	}
	b.blocked.Store(true)
	err := b.conn.XRead(ctx, &redis.XReadArgs{Streams: []string{b.stream, lastID}, Count: 1, Block: b.block}).Err()
	b.blocked.Store(false)
	if err == nil || err == redis.Nil {
		return nil
	}
	if isConnectionError(err) || didNotRun(err) { // didNotRun: MOVED and the like (a failover)
		_ = b.conn.Close()
		b.conn = nil
		b.clientID.Store(0)
	}
	return err
}

// unblock ends a blocked XREAD now (harmless when none is).
func (b *blockWaiter) unblock() {
	if id := b.clientID.Load(); id != 0 && b.blocked.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = b.node.Load().ClientUnblock(ctx, id).Err()
	}
}
