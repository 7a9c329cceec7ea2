// Command bench compares the Go SDK of Baton with Asynq (github.com/hibiken/asynq) on the same
// machine, in the same run: enqueue rate (one task per call from P goroutines, and Baton's
// EnqueueMany), and drain rate (N queued tasks, a no-op handler, the same concurrency), with the
// same 200-byte JSON payload. Each system gets a fresh private redis-server with default
// settings; Redis' CPU time per task is reported beside each rate.
//
//	go run . -tasks 100000        (bench/sdk/go/run.sh)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
	"github.com/hibiken/asynq"
)

type config struct {
	tasks, producers, concurrency, batch, payloadBytes int
	redisServer, repo                                  string
}

type result struct {
	name       string
	tasks      int
	seconds    float64
	cpuSeconds float64
}

func (r result) String() string {
	return fmt.Sprintf("%-22s %9.0f tasks/s  redis cpu %6.2f us/task  (%d tasks in %.2f s)",
		r.name, float64(r.tasks)/r.seconds, r.cpuSeconds*1e6/float64(r.tasks), r.tasks, r.seconds)
}

func main() {
	var cfg config
	flag.IntVar(&cfg.tasks, "tasks", 100000, "tasks per phase")
	flag.IntVar(&cfg.producers, "producers", 8, "goroutines enqueueing one task per call")
	flag.IntVar(&cfg.concurrency, "concurrency", 64, "handler goroutines (both systems)")
	flag.IntVar(&cfg.batch, "batch", 100, "tasks per Baton EnqueueMany call")
	flag.IntVar(&cfg.payloadBytes, "payload", 200, "payload size in bytes (a JSON object)")
	flag.StringVar(&cfg.redisServer, "redis-server", "/usr/bin/redis-server", "the redis-server to start")
	flag.StringVar(&cfg.repo, "repo", "../../..", "the Baton repository (for functions/*.lua)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if err := run(cfg); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// payload is a JSON object of exactly n bytes.
func payload(n int) []byte {
	head := `{"order_id":12345,"note":"`
	tail := `"}`
	return []byte(head + strings.Repeat("x", max(n-len(head)-len(tail), 0)) + tail)
}

func run(cfg config) error {
	repo, _ := filepath.Abs(cfg.repo)
	p := payload(cfg.payloadBytes)
	fmt.Printf("tasks %d, payload %d bytes, %d producer goroutines, handler concurrency %d, GOMAXPROCS default\n",
		cfg.tasks, len(p), cfg.producers, cfg.concurrency)
	var results []result

	s, err := startServer(cfg.redisServer)
	if err != nil {
		return err
	}
	if err := s.loadFunctions(repo); err != nil {
		s.stop()
		return err
	}
	rs, err := benchBaton(cfg, s, p)
	s.stop()
	if err != nil {
		return err
	}
	results = append(results, rs...)

	s, err = startServer(cfg.redisServer)
	if err != nil {
		return err
	}
	ra, err := benchAsynq(cfg, s, p)
	s.stop()
	if err != nil {
		return err
	}
	results = append(results, ra...)

	for _, r := range results {
		fmt.Println(r)
	}
	rate := func(name string) float64 {
		for _, r := range results {
			if r.name == name {
				return float64(r.tasks) / r.seconds
			}
		}
		return 0
	}
	fmt.Printf("baton/asynq enqueue (one per call): %.2fx\n", rate("baton enqueue")/rate("asynq enqueue"))
	fmt.Printf("baton/asynq drain:                  %.2fx\n", rate("baton drain")/rate("asynq drain"))
	return nil
}

// timed runs f and measures the wall time and the Redis CPU time it cost.
func timed(name string, tasks int, s *server, f func() error) (result, error) {
	cpu := s.cpuSeconds()
	start := time.Now()
	if err := f(); err != nil {
		return result{}, fmt.Errorf("%s: %w", name, err)
	}
	return result{name: name, tasks: tasks, seconds: time.Since(start).Seconds(), cpuSeconds: s.cpuSeconds() - cpu}, nil
}

// parallel runs f(i) for i in [0, n) on `workers` goroutines.
func parallel(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// waitCount polls until count() reaches n.
func waitCount(n uint64, count func() uint64) error {
	deadline := time.Now().Add(10 * time.Minute)
	for count() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d tasks were processed", count(), n)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

func benchBaton(cfg config, s *server, p []byte) ([]result, error) {
	ctx := context.Background()
	url := "redis://" + s.addr
	client, err := baton.NewClient(ctx, url, baton.WithRedisOptions(func(o *redisOptions) { o.PoolSize = cfg.producers * 2 }))
	if err != nil {
		return nil, err
	}
	defer client.Close()
	var out []result
	r, err := timed("baton enqueue", cfg.tasks, s, func() error {
		return parallel(cfg.tasks, cfg.producers, func(int) error {
			_, err := client.Enqueue(ctx, "bench", "noop", p)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	out = append(out, r)

	r, err = timed("baton drain", cfg.tasks, s, func() error {
		w, err := baton.NewWorker(url)
		if err != nil {
			return err
		}
		if err := w.HandleFunc("bench", "noop", func(context.Context, *baton.Task) error { return nil },
			baton.Concurrency(cfg.concurrency)); err != nil {
			return err
		}
		if err := w.Start(ctx); err != nil {
			return err
		}
		err = waitCount(uint64(cfg.tasks), func() uint64 { return w.Stats().Succeeded })
		_ = w.Shutdown(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	out = append(out, r)

	batches := (cfg.tasks + cfg.batch - 1) / cfg.batch
	r, err = timed("baton enqueue many", cfg.tasks, s, func() error {
		return parallel(batches, cfg.producers, func(b int) error {
			n := min(cfg.batch, cfg.tasks-b*cfg.batch)
			reqs := make([]baton.Request, n)
			for i := range reqs {
				reqs[i] = baton.Request{Namespace: "bench", Type: "many", Payload: p}
			}
			_, err := client.EnqueueMany(ctx, reqs)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	out = append(out, r)
	return out, nil
}

func benchAsynq(cfg config, s *server, p []byte) ([]result, error) {
	opt := asynq.RedisClientOpt{Addr: s.addr, PoolSize: cfg.producers * 2}
	client := asynq.NewClient(opt)
	defer client.Close()
	var out []result
	r, err := timed("asynq enqueue", cfg.tasks, s, func() error {
		return parallel(cfg.tasks, cfg.producers, func(int) error {
			_, err := client.Enqueue(asynq.NewTask("noop", p))
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	out = append(out, r)

	var done atomic.Uint64
	r, err = timed("asynq drain", cfg.tasks, s, func() error {
		srv := asynq.NewServer(asynq.RedisClientOpt{Addr: s.addr}, asynq.Config{
			Concurrency: cfg.concurrency,
			Logger:      quietLogger{},
			LogLevel:    asynq.ErrorLevel,
		})
		mux := asynq.NewServeMux()
		mux.HandleFunc("noop", func(context.Context, *asynq.Task) error {
			done.Add(1)
			return nil
		})
		if err := srv.Start(mux); err != nil {
			return err
		}
		err := waitCount(uint64(cfg.tasks), done.Load)
		srv.Shutdown()
		return err
	})
	if err != nil {
		return nil, err
	}
	out = append(out, r)
	return out, nil
}

// quietLogger drops Asynq's log lines (its INFO lines would interleave with the figures).
type quietLogger struct{}

func (quietLogger) Debug(args ...interface{}) {}
func (quietLogger) Info(args ...interface{})  {}
func (quietLogger) Warn(args ...interface{})  {}
func (quietLogger) Error(args ...interface{}) {}
func (quietLogger) Fatal(args ...interface{}) { fmt.Fprintln(os.Stderr, args...); os.Exit(1) }
