// Command baton-conformance-go is the Go SDK's conformance driver (tests/conformance/DRIVERS.md):
//
//	driver produce --redis URL --ns NS --cases FILE
//	driver consume --redis URL --ns NS --report FILE --corpus DIR --seconds N
//
// It uses only the public API of the Go SDK (github.com/baton-dev/baton/sdk/go).
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: driver produce|consume --redis URL --ns NS ...")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	redisURL := fs.String("redis", "redis://127.0.0.1:6379", "Redis URL")
	ns := fs.String("ns", "", "namespace")
	cases := fs.String("cases", "", "produce: the JSON lines of the tasks to enqueue")
	report := fs.String("report", "", "consume: the report file (JSON lines)")
	corpus := fs.String("corpus", "", "consume: the payload corpus directory")
	seconds := fs.Int("seconds", 60, "consume: how long to run")
	_ = fs.Parse(os.Args[2:])
	var code int
	switch os.Args[1] {
	case "produce":
		code = produce(*redisURL, *ns, *cases)
	case "consume":
		code = consume(*redisURL, *ns, *report, *corpus, *seconds)
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q (produce or consume)\n", os.Args[1])
		code = 2
	}
	os.Exit(code)
}
