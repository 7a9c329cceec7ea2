package main

import (
	"bytes"
	"encoding/json"
	"os"
	"sync"
)

// report appends JSON lines to the report file, one write per line.
type report struct {
	mu sync.Mutex
	f  *os.File
}

func openReport(path string) (*report, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &report{f: f}, nil
}

func (r *report) append(line map[string]any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b) // ends the line with "\n"
	enc.SetEscapeHTML(false)
	if err := enc.Encode(line); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.f.Write(b.Bytes())
	return err
}

func (r *report) close() { _ = r.f.Close() }
