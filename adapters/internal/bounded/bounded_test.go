package bounded

import (
	"fmt"
	"sync"
	"testing"
)

func TestMapForgetsTheOldestFirst(t *testing.T) {
	m := New(3)
	for i := range 4 {
		m.Put(fmt.Sprint(i), fmt.Sprint("v", i))
	}
	if _, ok := m.Get("0"); ok {
		t.Error("the oldest entry is still remembered past the limit")
	}
	for _, k := range []string{"1", "2", "3"} {
		if v, ok := m.Get(k); !ok || v != "v"+k {
			t.Errorf("Get(%s) = %q, %v; want v%s", k, v, ok, k)
		}
	}
	m.Put("1", "again") // keeps its place: 1 is still the oldest
	m.Put("4", "v4")
	if _, ok := m.Get("1"); ok {
		t.Error("a key put again moved to the back of the line")
	}
	m.Remove("2")
	m.Put("5", "v5")
	if v, ok := m.Get("3"); !ok || v != "v3" {
		t.Errorf("after a removal the map forgot %q too early", "3")
	}
	m.Put("", "x")
	if _, ok := m.Get(""); ok {
		t.Error("the empty key was stored")
	}
}

func TestMapIsSafeForConcurrentUse(t *testing.T) {
	m := New(10)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				k := fmt.Sprint(g, "/", i%20)
				m.Put(k, "v")
				m.Get(k)
				if i%3 == 0 {
					m.Remove(k)
				}
			}
		})
	}
	wg.Wait()
	if n := len(m.m); n > 10 || n != len(m.order) {
		t.Errorf("%d entries and %d in line, want at most 10 and the same", n, len(m.order))
	}
}
