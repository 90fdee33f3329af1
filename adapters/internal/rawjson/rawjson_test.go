package rawjson

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestObject(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		want map[string]json.RawMessage
		ok   bool
	}{
		{"an object", `{"a":"x","b":{"c":1},"d":null}`,
			map[string]json.RawMessage{"a": json.RawMessage(`"x"`), "b": json.RawMessage(`{"c":1}`), "d": json.RawMessage(`null`)}, true},
		{"an empty object", `{}`, map[string]json.RawMessage{}, true},
		{"null", `null`, nil, false},
		{"an array", `[{"a":1}]`, nil, false},
		{"a string", `"not an object"`, nil, false},
		{"a number", `7`, nil, false},
		{"no JSON", `{"a":`, nil, false},
		{"nothing", ``, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Object(json.RawMessage(tc.raw))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestKeep(t *testing.T) {
	obj := map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`"x"`), "c": json.RawMessage(`null`)}
	for _, tc := range []struct {
		name string
		obj  map[string]json.RawMessage
		keys []string
		want map[string]json.RawMessage
	}{
		{"some keys", obj, []string{"a", "c"}, map[string]json.RawMessage{"a": json.RawMessage(`1`), "c": json.RawMessage(`null`)}},
		{"a key it does not have", obj, []string{"b", "z"}, map[string]json.RawMessage{"b": json.RawMessage(`"x"`)}},
		{"a key named twice", obj, []string{"a", "a"}, map[string]json.RawMessage{"a": json.RawMessage(`1`)}},
		{"no keys", obj, nil, map[string]json.RawMessage{}},
		{"no object", nil, []string{"a"}, map[string]json.RawMessage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Keep(tc.obj, tc.keys...)
			assert.Equal(t, tc.want, got)
			assert.NotNil(t, got, "a kept object encodes as {}, never null")
		})
	}
	assert.Len(t, obj, 3, "Keep changed the object it was given")
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"a string", `"C1"`, "C1"},
		{"an escaped string", `"a\"b\u00e9"`, `a"bé`},
		{"an empty string", `""`, ""},
		{"a number", `1712345678.000100`, ""},
		{"an object", `{"ts":"1"}`, ""},
		{"an array", `["x"]`, ""},
		{"true", `true`, ""},
		{"null", `null`, ""},
		{"no JSON", `"x`, ""},
		{"nothing (a key that is absent)", ``, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, String(json.RawMessage(tc.raw)))
		})
	}
}

func TestMarshal(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"an object of raw values", map[string]json.RawMessage{"b": json.RawMessage(`{"c":1}`), "a": json.RawMessage(`"x"`)}, `{"a":"x","b":{"c":1}}`},
		{"a missing raw value", map[string]json.RawMessage{"a": nil}, `{"a":null}`},
		{"an array of raw values", []json.RawMessage{json.RawMessage(`1`), json.RawMessage(`{}`)}, `[1,{}]`},
		{"an empty array", []json.RawMessage{}, `[]`},
		{"a raw value that is no JSON", map[string]json.RawMessage{"a": json.RawMessage(`{"b":`)}, `null`},
		{"a value JSON cannot hold", math.NaN(), `null`},
		{"a channel", make(chan int), `null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, string(Marshal(tc.v)))
		})
	}
}
