package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

// caseLine is one task of the --cases file.
type caseLine struct {
	Case             string                     `json:"case"`
	TaskType         string                     `json:"task_type"`
	PayloadFile      string                     `json:"payload_file"`
	MaxRetry         int                        `json:"max_retry"`
	DelaySeconds     int64                      `json:"delay_seconds"`
	ExecutionTimeout *int64                     `json:"execution_timeout"`
	TaskID           *string                    `json:"task_id"`
	Extra            map[string]json.RawMessage `json:"extra"`
}

// produce enqueues each case with the SDK: the payload file's exact bytes, the given settings
// and id (or a UUIDv7 the SDK makes), the extra fields as raw JSON values.
func produce(redisURL, ns, casesPath string) int {
	ctx := context.Background()
	f, err := os.Open(casesPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "produce:", err)
		return 1
	}
	defer f.Close()
	client, err := baton.NewClient(ctx, redisURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "produce:", err)
		return 1
	}
	defer client.Close()
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	failed := false
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	for scanner.Scan() {
		if len(scanner.Bytes()) == 0 {
			continue
		}
		var line caseLine
		if err := json.Unmarshal(scanner.Bytes(), &line); err != nil {
			fmt.Fprintln(os.Stderr, "produce: bad case line:", err)
			failed = true
			continue
		}
		payload, err := os.ReadFile(line.PayloadFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "produce:", err)
			failed = true
			continue
		}
		opts := []baton.EnqueueOption{baton.MaxRetry(line.MaxRetry),
			baton.Delay(time.Duration(line.DelaySeconds) * time.Second)}
		if line.ExecutionTimeout != nil {
			opts = append(opts, baton.ExecutionTimeout(time.Duration(*line.ExecutionTimeout)*time.Second))
		}
		if line.TaskID != nil {
			opts = append(opts, baton.TaskID(*line.TaskID))
		}
		for name, value := range line.Extra {
			opts = append(opts, baton.Extra(name, value))
		}
		res, err := client.Enqueue(ctx, ns, line.TaskType, payload, opts...)
		if err != nil {
			fmt.Fprintf(os.Stderr, "produce %s: %v\n", line.Case, err)
			failed = true
			continue
		}
		_ = out.Encode(map[string]string{"case": line.Case, "task_id": res.TaskID, "status": string(res.Outcome)})
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "produce:", err)
		failed = true
	}
	if failed {
		return 1
	}
	return 0
}
