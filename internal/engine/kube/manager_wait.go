package kube

import (
	"context"
	"errors"
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

// waitRamp is how a wait's reads start: an object a write has just made is
// often ready within a second (a Deployment's first Pod, a Job that exits at
// once), and a wait that read it only every PollInterval would keep the
// apply waiting for most of an interval after that. So the first reads come
// every 250 ms for a second, then every 500 ms for two more, then every
// Interval: seven reads of each object more than a plain 2-second poll in
// the first three seconds, none after. A stage lasts half an interval past
// its last read, so that no read is sent as its time runs out (client-go's
// rate limiter refuses a request that would end after the deadline).
var waitRamp = []struct{ interval, length time.Duration }{
	{250 * time.Millisecond, 1125 * time.Millisecond},
	{500 * time.Millisecond, 2250 * time.Millisecond},
}

// Wait blocks until every object in entries is Current by kstatus, or returns an
// error naming the objects that are not. The reads follow waitRamp, then
// come every opts.Interval.
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
	start := time.Now()
	for _, stage := range waitRamp {
		left := o.Timeout - time.Since(start)
		if stage.interval >= o.Interval || stage.length >= left {
			break
		}
		so := o
		so.Interval, so.Timeout = stage.interval, stage.length
		sctx, cancel := context.WithTimeout(ctx, stage.length)
		deadline, _ := sctx.Deadline()
		err := m.rm.WaitForSetWithContext(sctx, set, so)
		stageOver := ctx.Err() == nil && (errors.Is(sctx.Err(), context.DeadlineExceeded) || !time.Now().Before(deadline))
		cancel()
		if err == nil || !stageOver {
			return err
		}
		// Not ready yet (or not yet read): the next stage reads again,
		// less often; a Failed object ended the stage early, so it is
		// not this.
	}
	o.Timeout -= time.Since(start)
	return m.rm.WaitForSetWithContext(ctx, set, o)
}
