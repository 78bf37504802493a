package release

import (
	"sync"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// readCacheSize bounds the releases a readCache holds: a plan asks for each
// release right after refresh read it, so only the releases being planned
// concurrently (the CLI's -parallelism) are in it at once; a refresh-only
// run, which plans nothing, leaves at most this many behind.
const readCacheSize = 64

// readCache hands the release that refresh (Observe) decoded from Helm
// storage to the plan of the same resource that follows it in the same
// provider process, so that a plan reads and decodes each release once. An
// entry is taken once, and only for the revision that refresh put into state;
// a plan without refresh (-refresh=false) reads storage itself, and so does
// apply, which never uses it.
type readCache struct {
	mu    sync.Mutex
	byKey map[string]*helmrelease.Release
	order []string // keys, oldest first
}

func newReadCache() *readCache { return &readCache{byKey: map[string]*helmrelease.Release{}} }

func cacheKey(storageNS, name string) string { return storageNS + "/" + name }

// put keeps rls, read from storage namespace storageNS, for the next take.
func (c *readCache) put(storageNS string, rls *helmrelease.Release) {
	key := cacheKey(storageNS, rls.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; !ok {
		c.order = append(c.order, key)
	}
	c.byKey[key] = rls
	for len(c.order) > readCacheSize {
		delete(c.byKey, c.order[0])
		c.order = c.order[1:]
	}
}

// take removes and returns the release kept for name in storageNS when it is
// revision version; nil otherwise.
func (c *readCache) take(storageNS, name string, version int) *helmrelease.Release {
	key := cacheKey(storageNS, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	rls, ok := c.byKey[key]
	if !ok {
		return nil
	}
	c.forgetLocked(key)
	if rls.Version != version {
		return nil
	}
	return rls
}

// forget drops what is kept for name in storageNS: apply and uninstall,
// which change it, call it first.
func (c *readCache) forget(storageNS, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(cacheKey(storageNS, name))
}

func (c *readCache) forgetLocked(key string) {
	if _, ok := c.byKey[key]; !ok {
		return
	}
	delete(c.byKey, key)
	for i, k := range c.order {
		if k == key {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}
