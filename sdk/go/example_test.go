package baton_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

// The examples run as tests against the test suite's redis-server (BATON_REDIS_URL); the README
// shows the same code.

func Example() {
	ctx := context.Background()
	url := os.Getenv("BATON_REDIS_URL") // e.g. redis://127.0.0.1:6379

	// Producer: enqueue a task; the payload is any JSON object.
	client, err := baton.NewClient(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	res, err := client.Enqueue(ctx, "example-shop", "send_email",
		map[string]string{"to": "ada@example.com", "template": "welcome"},
		baton.MaxRetry(5), baton.ExecutionTimeout(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("enqueue:", res.Outcome)

	// Worker: a goroutine pool per task type; return an error to retry, panics are caught.
	done := make(chan struct{})
	worker, err := baton.NewWorker(url)
	if err != nil {
		log.Fatal(err)
	}
	err = worker.HandleFunc("example-shop", "send_email", func(ctx context.Context, t *baton.Task) error {
		var email struct{ To, Template string }
		if err := t.Decode(&email); err != nil {
			return baton.NonRetryable(err) // a payload that does not fit never will
		}
		fmt.Printf("sending %s to %s (attempt %d)\n", email.Template, email.To, t.Attempt)
		close(done)
		return nil
	}, baton.Concurrency(4))
	if err != nil {
		log.Fatal(err)
	}
	if err := worker.Start(ctx); err != nil {
		log.Fatal(err)
	}
	<-done
	shutdownCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := worker.Shutdown(shutdownCtx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("acked:", worker.Stats().Succeeded)
	// Output:
	// enqueue: queued
	// sending welcome to ada@example.com (attempt 1)
	// acked: 1
}

func ExampleClient_Enqueue_idempotent() {
	ctx := context.Background()
	client, err := baton.NewClient(ctx, os.Getenv("BATON_REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	// A caller-supplied id makes enqueue idempotent: the second call writes nothing.
	for i := 0; i < 2; i++ {
		res, err := client.Enqueue(ctx, "example-billing", "invoice", []byte(`{"order_id": 42}`),
			baton.TaskID("invoice-order-42"), baton.Delay(time.Hour))
		if err != nil {
			log.Fatal(err)
		}
		if res.Outcome == baton.Duplicate {
			fmt.Println(res.TaskID, "duplicate of a task in state", res.State)
		} else {
			fmt.Println(res.TaskID, res.Outcome, "due in", time.Until(res.Due).Round(time.Hour))
		}
	}
	// Output:
	// invoice-order-42 scheduled due in 1h0m0s
	// invoice-order-42 duplicate of a task in state scheduled
}

func ExampleParseTask() {
	_, err := baton.ParseTask([]byte(`{"task_id": "t-1", "namespace": "shop", "task_type": "email",
		"payload": {}, "max_retry": 3, "delay_seconds": 0, "created_at": 1722489600000}`))
	fmt.Println(err)
	var e *baton.Error
	fmt.Println(errors.Is(err, baton.ErrInvalidArgument), errors.As(err, &e) && e.Field == "created_at")
	// Output:
	// created_at: must be Unix seconds 946684800..4102444800 (got 1722489600000: milliseconds?)
	// true true
}

func ExampleTask_Decode() {
	task, _ := baton.ParseTask([]byte(`{"task_id": "t-1", "namespace": "shop", "task_type": "email",
		"payload": {"order_id": 12345678901234567890, "price": 1.10}, "max_retry": 3,
		"delay_seconds": 0, "created_at": 1722489600}`))
	// Decoding keeps numbers as json.Number, so integers beyond 2^53 survive.
	m, _ := task.PayloadMap()
	fmt.Println(m["order_id"], m["price"])
	fmt.Println(string(task.Payload)) // the raw bytes, as the producer wrote them
	// Output:
	// 12345678901234567890 1.10
	// {"order_id": 12345678901234567890, "price": 1.10}
}

func ExampleNonRetryable() {
	handlerErr := fmt.Errorf("order 42 does not exist: %w", baton.ErrNonRetryable)
	fmt.Println(errors.Is(handlerErr, baton.ErrNonRetryable))
	wrapped := baton.NonRetryable(errors.New("bad input"))
	fmt.Println(errors.Is(wrapped, baton.ErrNonRetryable), wrapped)
	// Output:
	// true
	// true bad input
}
