package main

import (
	"bytes"
	"encoding/json"
	"math/big"
)

// decode parses JSON text keeping numbers as json.Number (no precision lost).
func decode(text []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// jsonEqual compares two decoded JSON values; numbers by their exact value (1.10 == 1.1,
// -0 == 0, 12345678901234567890 exactly), never through float64.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		rx, okx := new(big.Rat).SetString(x.String())
		ry, oky := new(big.Rat).SetString(y.String())
		if !okx || !oky {
			return x == y
		}
		return rx.Cmp(ry) == 0
	default:
		return a == b
	}
}
