package webchat

import "sync"

// recentKeys remembers the message ID given to each recent idempotency key,
// so a retried bot send returns the first send's ID instead of posting twice.
type recentKeys struct {
	mu    sync.Mutex
	limit int
	ids   map[string]string
	order []string
}

func newRecentKeys(limit int) *recentKeys {
	return &recentKeys{limit: limit, ids: map[string]string{}}
}

func (k *recentKeys) claim(key string, newID func() string) (id string, fresh bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if id, ok := k.ids[key]; ok {
		return id, false
	}
	id = newID()
	k.ids[key] = id
	k.order = append(k.order, key)
	if len(k.order) > k.limit {
		delete(k.ids, k.order[0])
		k.order = k.order[1:]
	}
	return id, true
}
