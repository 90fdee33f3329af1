// Package rawjson reads and trims raw JSON objects for the adapters'
// salvage of events their SDKs cannot read: an event is read as a map of
// its keys' raw values, cut down to the keys its adapter uses and encoded
// again for the SDK to read once more. It holds no platform's rules:
// which keys to keep, and what to do when even the cut-down event cannot
// be read, stay in each adapter.
package rawjson

import "encoding/json"

// Object reads raw as a JSON object, each key's value as it is sent;
// false when raw is none (null, an array, a string, or no JSON at all).
func Object(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, false
	}
	return obj, true
}

// Keep is a new map of obj's entries for keys, those of them it has;
// obj itself is left as it is.
func Keep(obj map[string]json.RawMessage, keys ...string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(keys))
	for _, k := range keys {
		if v, ok := obj[k]; ok {
			out[k] = v
		}
	}
	return out
}

// String is raw's string, "" when raw is no JSON string (a number, an
// object, null, nothing): a salvage reads a field of a type it does not
// expect as absent instead of failing on it.
func String(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// Marshal is v encoded. The adapters encode only what they decoded from
// valid JSON (maps and slices of json.RawMessage), which does not fail;
// were it to, v reads as JSON null, so that the SDK's second read finds
// the value absent or the event unreadable, rather than the salvage
// stopping the adapter.
func Marshal(v any) json.RawMessage {
	out, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return out
}
