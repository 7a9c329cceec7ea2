// Package redistest starts real redis-server processes for the SDK's tests (never a mock): each
// listens on a free 127.0.0.1 port, keeps its files in its own temporary directory, never
// persists (--save ” --appendonly no), and has the Baton functions library loaded the way
// `baton init` does (functions/*.lua concatenated in file-name order, FUNCTION LOAD REPLACE).
package redistest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrorsKept is how many failures of one task the errors hash keeps, the newest (ERRORS_KEPT in
// functions/00-header.lua, docs/keyspace.md).
const ErrorsKept = 50

// ErrorHistory returns the failures recorded for task id in errorsKey (baton:v2:{NS}:errors),
// oldest first, each as its JSON object text; empty when it has none. The hash has one field per
// failure (docs/keyspace.md, "Error history"): ID -> N, the sequence number of the newest, and
// ID|K -> failure K. So: HGET errors ID -> N, then HMGET errors ID|max(1,N-49) .. ID|N.
func ErrorHistory(ctx context.Context, rdb *redis.Client, errorsKey, id string) ([]json.RawMessage, error) {
	text, err := rdb.HGet(ctx, errorsKey, id).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return nil, fmt.Errorf("errors counter of %s is %q, not an integer", id, text)
	}
	var fields []string
	for k := max(1, n-ErrorsKept+1); k <= n; k++ {
		fields = append(fields, id+"|"+strconv.Itoa(k))
	}
	if len(fields) == 0 {
		return nil, nil
	}
	values, err := rdb.HMGet(ctx, errorsKey, fields...).Result()
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for _, v := range values {
		if s, ok := v.(string); ok {
			out = append(out, json.RawMessage(s))
		}
	}
	return out, nil
}

// Server is one redis-server process.
type Server struct {
	Port int
	dir  string
	cmd  *exec.Cmd
}

// Binary is the redis-server to run: $REDIS_SERVER, else the one on PATH, else Debian's.
func Binary() string {
	if b := os.Getenv("REDIS_SERVER"); b != "" {
		return b
	}
	if b, err := exec.LookPath("redis-server"); err == nil {
		return b
	}
	return "/usr/bin/redis-server"
}

// RepoRoot is the Baton repository root (this file is sdk/go/internal/redistest/redistest.go).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..", ".."))
}

// LibrarySource is functions/*.lua concatenated in file-name order (scripts/functions.sh).
func LibrarySource() (string, error) {
	dir := filepath.Join(RepoRoot(), "functions")
	files, err := filepath.Glob(filepath.Join(dir, "*.lua"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("no functions/*.lua under %s", dir)
	}
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		b.Write(data)
	}
	return b.String(), nil
}

// Start starts a server on a free port with the functions library loaded.
func Start() (*Server, error) {
	var last error
	for i := 0; i < 5; i++ { // another process may take the port between the probe and the bind
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{Port: port}
		if last = s.start(); last == nil {
			if last = s.LoadFunctions(); last == nil {
				return s, nil
			}
			s.Stop()
		}
	}
	return nil, fmt.Errorf("redis-server did not start: %w", last)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	if s.dir == "" {
		dir, err := os.MkdirTemp("", "baton-go-redis-")
		if err != nil {
			return err
		}
		s.dir = dir
	}
	log, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(Binary(), "--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--daemonize", "no")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			s.cmd = nil
			return fmt.Errorf("redis-server exited: %v", err)
		default:
		}
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, DialTimeout: time.Second})
		err := c.Ping(context.Background()).Err()
		_ = c.Close()
		if err == nil {
			go func() { <-exited }() // reap when it is killed
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	s.cmd = nil
	return errors.New("redis-server gave no PING reply within 10 s")
}

// Addr is "127.0.0.1:port".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL is "redis://127.0.0.1:port".
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Client is a plain go-redis client for the server (RESP2, no version check).
func (s *Server) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
}

// LoadFunctions loads (or reloads) the Baton functions library.
func (s *Server) LoadFunctions() error {
	src, err := LibrarySource()
	if err != nil {
		return err
	}
	c := s.Client()
	defer c.Close()
	return c.FunctionLoadReplace(context.Background(), src).Err()
}

// Restart kills the server (SIGKILL: everything in memory is lost, the functions library too)
// and starts it again on the same port, without the library: call LoadFunctions.
func (s *Server) Restart() error {
	s.kill()
	var err error
	for i := 0; i < 50; i++ { // the port may take a moment to be free again
		if err = s.start(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Kill stops the server abruptly, keeping its port for Restart.
func (s *Server) Kill() { s.kill() }

func (s *Server) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		// Wait until the port is closed, so a restart can bind it.
		for i := 0; i < 100; i++ {
			c, err := net.DialTimeout("tcp", s.Addr(), 100*time.Millisecond)
			if err != nil {
				break
			}
			_ = c.Close()
			time.Sleep(20 * time.Millisecond)
		}
	}
	s.cmd = nil
}

// Stop kills the server and removes its directory.
func (s *Server) Stop() {
	s.kill()
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
		s.dir = ""
	}
}
