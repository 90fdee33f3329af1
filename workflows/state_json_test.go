package workflows

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var updateStateGolden = flag.Bool("update-state-golden", false, "rewrite testdata/state_*.json from the current State (never to make a change pass: the files guard running sessions)")

// TestStateJSONShape guards the continue-as-new input of running sessions:
// a State with every field set, and an empty one, encode to the JSON objects
// recorded in testdata, and decoding those objects gives the same State
// back. However State is grouped in Go, its JSON must not change; a field
// may only be added, and omitted when zero.
func TestStateJSONShape(t *testing.T) {
	full := &State{}
	fillEveryField(reflect.ValueOf(full).Elem())
	for name, st := range map[string]*State{"full": full, "empty": {}} {
		t.Run(name, func(t *testing.T) {
			file := "testdata/state_" + name + ".json"
			got, err := json.MarshalIndent(st, "", "  ")
			require.NoError(t, err)
			if *updateStateGolden {
				require.NoError(t, os.WriteFile(file, append(got, '\n'), 0o644))
			}
			want, err := os.ReadFile(file)
			require.NoError(t, err)
			if name == "empty" {
				require.JSONEq(t, string(want), string(got), "a new field must be omitted when zero, or old runs' state would read differently")
			} else {
				// Fields may be added (old runs' state decodes them as
				// zero), never renamed or removed.
				var w, g any
				require.NoError(t, json.Unmarshal(want, &w))
				require.NoError(t, json.Unmarshal(got, &g))
				require.NoError(t, jsonSubset(w, g, "state"), "the State's JSON lost or changed a field: running sessions could not continue")
			}

			var back State
			require.NoError(t, json.Unmarshal(want, &back))
			again, err := json.Marshal(&back)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(again), "the recorded State does not decode to itself")
		})
	}
}

// jsonSubset reports the first place where want is not contained in got:
// every key of want's objects must be in got's with a contained value.
func jsonSubset(want, got any, at string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %v", at, got)
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s.%s is missing", at, k)
			}
			if err := jsonSubset(wv, gv, at+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: want %d elements, got %v", at, len(w), got)
		}
		for i := range w {
			if err := jsonSubset(w[i], g[i], fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("%s: want %v, got %v", at, want, got)
	}
	return nil
}

// fillEveryField sets every exported field reachable from v to a value
// that is not its zero value, so a field dropped or renamed in the JSON
// shows in the comparison. The values do not depend on the nesting, which
// grouping fields in embedded structs changes.
func fillEveryField(v reflect.Value) {
	if v.Type() == reflect.TypeOf(time.Time{}) {
		v.Set(reflect.ValueOf(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillEveryField(v.Field(i))
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillEveryField(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillEveryField(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		key, elem := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillEveryField(key)
		fillEveryField(elem)
		v.SetMapIndex(key, elem)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(7)
	}
}
