package baton_test

import "runtime"

// runtimeGoexit ends the calling goroutine (what t.FailNow does inside a handler).
func runtimeGoexit() { runtime.Goexit() }
