package gateway

import "container/list"

// lru is a map of at most limit keys. When a new key would pass the
// limit, the key used least recently is forgotten. It is not safe for
// concurrent use: the Limiter's mutex guards every one.
type lru[V any] struct {
	limit int
	items map[string]*list.Element
	order *list.List // of *lruEntry[V], most recently used first
}

type lruEntry[V any] struct {
	key   string
	value V
}

func newLRU[V any](limit int) *lru[V] {
	return &lru[V]{limit: max(limit, 1), items: map[string]*list.Element{}, order: list.New()}
}

// get is key's value, and whether it is held; it marks key used.
func (c *lru[V]) get(key string) (V, bool) {
	e, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry[V]).value, true
}

// has says whether key is held, without marking it used.
func (c *lru[V]) has(key string) bool {
	_, ok := c.items[key]
	return ok
}

// put sets key's value and marks it used, forgetting the least recently
// used key when the map is full.
func (c *lru[V]) put(key string, v V) {
	if e, ok := c.items[key]; ok {
		e.Value.(*lruEntry[V]).value = v
		c.order.MoveToFront(e)
		return
	}
	if c.order.Len() >= c.limit {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*lruEntry[V]).key)
	}
	c.items[key] = c.order.PushFront(&lruEntry[V]{key: key, value: v})
}

// getOrPut is key's value, made and put first when key is not held.
func (c *lru[V]) getOrPut(key string, make func() V) V {
	if v, ok := c.get(key); ok {
		return v
	}
	v := make()
	c.put(key, v)
	return v
}

func (c *lru[V]) len() int { return c.order.Len() }
