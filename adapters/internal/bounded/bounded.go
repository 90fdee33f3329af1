// Package bounded is the small memory the outbound adapters keep of what
// they did (a reaction set on a message, a message sent for a key): a
// string map of at most a fixed number of entries, the oldest forgotten
// first. What it forgets, an adapter must be able to find out again; it
// holds no platform code.
package bounded

import (
	"slices"
	"sync"
)

// Map is a FIFO-evicted string map, safe for concurrent use; nothing
// waits on it. The empty key is never stored.
type Map struct {
	mu    sync.Mutex
	limit int
	m     map[string]string
	order []string // keys, oldest first
}

// New is a Map of at most limit entries (at least one).
func New(limit int) *Map { return &Map{limit: max(limit, 1), m: map[string]string{}} }

// Get is the value of key, and whether it is remembered.
func (b *Map) Get(key string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[key]
	return v, ok
}

// Put remembers key's value, forgetting the oldest entry when full. A
// key put again keeps its place in line.
func (b *Map) Put(key, v string) {
	if key == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[key]; !ok {
		if len(b.order) >= b.limit {
			delete(b.m, b.order[0])
			b.order = b.order[1:]
		}
		b.order = append(b.order, key)
	}
	b.m[key] = v
}

// Remove forgets key.
func (b *Map) Remove(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[key]; ok {
		delete(b.m, key)
		b.order = slices.DeleteFunc(b.order, func(k string) bool { return k == key })
	}
}
