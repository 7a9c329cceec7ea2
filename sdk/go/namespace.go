package baton

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// namespaceSetting is one setting of baton_v2_configure (generated from contract/protocol.json).
type namespaceSetting struct {
	name          string
	def, min, max int64
}

// NamespaceSettings returns the effective settings of a namespace (events_maxlen,
// done_retention_s, dlq_max, dlq_retention_s, lease_ms), kept in Redis for every language.
func (c *Client) NamespaceSettings(ctx context.Context, ns string) (map[string]int64, error) {
	return configure(ctx, c, ns, nil)
}

// Configure changes settings of a namespace (name -> value; a negative value puts the default
// back) and returns the effective settings. A value out of its range is refused
// (invalid_argument naming the setting) and nothing is written. A partitioned namespace has its
// settings written in every partition (one round trip, after reading the partition count afresh);
// the result is partition 0's.
func (c *Client) Configure(ctx context.Context, ns string, settings map[string]int64) (map[string]int64, error) {
	var items []configureItem
	for _, name := range sortedKeys(settings) {
		known := false
		for _, s := range namespaceSettings {
			known = known || s.name == name
		}
		if !known {
			return nil, &Error{Op: "configure", Code: CodeInvalidArgument, Field: name, Message: "is not a setting"}
		}
		v := ""
		if settings[name] >= 0 {
			v = strconv.FormatInt(settings[name], 10)
		}
		items = append(items, configureItem{Setting: name, Value: v})
	}
	return configure(ctx, c, ns, items)
}

func configure(ctx context.Context, c *Client, ns string, items []configureItem) (map[string]int64, error) {
	if err := checkName("namespace", ns); err != nil {
		err.Op = "configure"
		return nil, err
	}
	if len(items) == 0 { // a read: partition 0 speaks for the namespace
		return readSettings(fcallConfigure(ctx, c.rdb, newKeySet(ns, ""), nil).Result())
	}
	// The count is read now, not taken from the 5 s copy: a change must reach a partition added a
	// moment ago too.
	count, err := c.partitions.readNow(ctx, ns)
	if err != nil {
		return nil, fromRedis("configure", err)
	}
	if count == 1 {
		return readSettings(fcallConfigure(ctx, c.rdb, newKeySet(ns, ""), items).Result())
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.Cmd, count)
	for p := range cmds {
		cmds[p] = fcallConfigure(ctx, pipe, newKeySet(StorageNamespace(ns, p), ""), items)
	}
	if err := execPipeline(ctx, pipe); err != nil {
		return nil, fromRedis("configure", err)
	}
	first, err := readSettings(cmds[0].Result())
	if err != nil {
		return nil, err
	}
	for p := 1; p < len(cmds); p++ {
		if _, err := readSettings(cmds[p].Result()); err != nil {
			return nil, withPartition(err, StorageNamespace(ns, p))
		}
	}
	return first, nil
}

// withPartition names the storage namespace in an error of one of its calls.
func withPartition(err error, storage string) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Message += " (partition " + storage + ")"
		return &c
	}
	return err
}

// readSettings decodes baton_v2_configure's flat [setting, integer, ...] reply.
func readSettings(reply any, err error) (map[string]int64, error) {
	if err != nil {
		return nil, fromRedis("configure", err)
	}
	flat, ok := reply.([]any)
	if !ok || len(flat)%2 != 0 {
		return nil, errorf("configure", "unexpected reply %v", reply)
	}
	out := make(map[string]int64, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		v, ok := flat[i+1].(int64)
		if !ok {
			return nil, errorf("configure", "setting %v is not an integer", flat[i])
		}
		out[fmt.Sprint(flat[i])] = v
	}
	return out, nil
}
