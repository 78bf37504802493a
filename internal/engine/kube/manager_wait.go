package kube

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
)

// PollInterval is how often the engines' waits read the objects' status:
// Helm's legacy wait polls every 2 seconds; fluxcd/pkg/ssa's default (5s)
// would add seconds to every apply.
const PollInterval = 2 * time.Second

// WaitOptions are the options of Wait.
type WaitOptions struct {
	Interval time.Duration
	Timeout  time.Duration
	// FailFast returns as soon as one object is Failed, instead of waiting for
	// the timeout.
	FailFast bool
}

// Wait blocks until every object in entries is Current by kstatus, or returns an
// error naming the objects that are not.
func (m *Manager) Wait(ctx context.Context, entries []Entry, opts WaitOptions) error {
	set := make(object.ObjMetadataSet, 0, len(entries))
	for _, e := range entries {
		id, err := object.ParseObjMetadata(e.ID)
		if err != nil {
			return fmt.Errorf("inventory entry %q: %w", e.ID, err)
		}
		set = append(set, id)
	}
	o := ssa.DefaultWaitOptions()
	if opts.Interval > 0 {
		o.Interval = opts.Interval
	}
	if opts.Timeout > 0 {
		o.Timeout = opts.Timeout
	}
	o.FailFast = opts.FailFast
	return m.rm.WaitForSetWithContext(ctx, set, o)
}
