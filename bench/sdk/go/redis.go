package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is a private redis-server for one system's run: loopback, free port, default settings,
// no persistence (the same for Baton and Asynq).
type server struct {
	addr string
	dir  string
	cmd  *exec.Cmd
}

func startServer(binary string) (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "baton-go-bench-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir, cmd: cmd}
	c := s.client()
	defer c.Close()
	for i := 0; ; i++ {
		if c.Ping(context.Background()).Err() == nil {
			return s, nil
		}
		if i > 100 {
			s.stop()
			return nil, fmt.Errorf("redis-server on %s did not answer", s.addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.addr, Protocol: 2})
}

func (s *server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}

// loadFunctions loads the Baton library (functions/*.lua in file-name order), as `baton init`.
func (s *server) loadFunctions(repo string) error {
	files, _ := filepath.Glob(filepath.Join(repo, "functions", "*.lua"))
	if len(files) == 0 {
		return fmt.Errorf("no functions/*.lua under %s", repo)
	}
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		b.Write(data)
	}
	c := s.client()
	defer c.Close()
	return c.FunctionLoadReplace(context.Background(), b.String()).Err()
}

// cpuSeconds is the server's used_cpu_user + used_cpu_sys.
func (s *server) cpuSeconds() float64 {
	c := s.client()
	defer c.Close()
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		return 0
	}
	total := 0.0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}
