// Package helmfm makes Helm's kube client write under the field manager of
// its caller.
//
// Helm 4 keeps the field manager of every write in one package variable,
// kube.ManagedFieldsManager (the binary's name when empty), read at each
// request: there is no per-client setting in v4.3.1. One provider process
// can hold several provider configurations (aliases), each with its own
// field_manager, whose releases are applied at once. Client wraps a Helm kube
// client so that each of its writes (Create, Update, Delete) runs while the
// variable holds the wrapper's manager: writes under one manager run
// together, a write under another manager waits until they are done, and
// the variable never changes under a running write.
package helmfm

import (
	"sync"

	helmkube "helm.sh/helm/v4/pkg/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	mu      sync.Mutex
	changed = sync.NewCond(&mu)
	current string             // the manager of the running writes
	holders int                // how many writes run under current
	waiting = map[string]int{} // writes waiting, by manager
)

// Hold sets Helm's field manager to manager and keeps it until the returned
// function is called. Holders of one manager share it; a holder of another
// manager waits until every holder has let go. While a holder of another
// manager waits, new holders of the current one wait too, so that no
// manager waits forever.
func Hold(manager string) (release func()) {
	mu.Lock()
	waiting[manager]++
	for !(holders == 0 || (current == manager && othersWaiting(manager) == 0)) {
		changed.Wait()
	}
	waiting[manager]--
	if holders == 0 {
		current = manager
		helmkube.ManagedFieldsManager = manager
	}
	holders++
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			holders--
			if holders == 0 {
				changed.Broadcast()
			}
		})
	}
}

// othersWaiting counts the writes waiting under a manager other than m.
func othersWaiting(m string) int {
	n := 0
	for k, v := range waiting {
		if k != m {
			n += v
		}
	}
	return n
}

// Current is the manager Helm writes under now, for tests.
func Current() string {
	mu.Lock()
	defer mu.Unlock()
	return helmkube.ManagedFieldsManager
}

// Client is a Helm kube client whose writes run under Manager.
type Client struct {
	helmkube.Interface
	Manager string
}

var (
	_ helmkube.Interface            = (*Client)(nil)
	_ helmkube.InterfaceWaitOptions = (*Client)(nil)
)

func (c *Client) Create(resources helmkube.ResourceList, options ...helmkube.ClientCreateOption) (*helmkube.Result, error) {
	defer Hold(c.Manager)()
	return c.Interface.Create(resources, options...)
}

func (c *Client) Update(original, target helmkube.ResourceList, options ...helmkube.ClientUpdateOption) (*helmkube.Result, error) {
	defer Hold(c.Manager)()
	return c.Interface.Update(original, target, options...)
}

func (c *Client) Delete(resources helmkube.ResourceList, policy metav1.DeletionPropagation) (*helmkube.Result, []error) {
	defer Hold(c.Manager)()
	return c.Interface.Delete(resources, policy)
}

// GetWaiterWithOptions is the wrapped client's, which Helm's actions ask
// for when the client has it.
func (c *Client) GetWaiterWithOptions(ws helmkube.WaitStrategy, opts ...helmkube.WaitOption) (helmkube.Waiter, error) {
	if w, ok := c.Interface.(helmkube.InterfaceWaitOptions); ok {
		return w.GetWaiterWithOptions(ws, opts...)
	}
	return c.Interface.GetWaiter(ws)
}
