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

// WaitRamp is how the engines' waits start reading: an object a write has
// just made is often ready within a second (a Deployment's first Pod, a Job
// that exits at once), and a wait that read it only every PollInterval would
// keep the apply waiting for most of an interval after that. So the first
// reads come every 250 ms for a second, then every 500 ms for two more, then
// every PollInterval: seven reads of each object more than a plain 2-second
// poll in the first three seconds, none after. A stage lasts half an
// interval past its last read, so that no read is sent as its time runs out
// (client-go's rate limiter refuses a request that would end after the
// deadline).
var WaitRamp = []RampStage{
	{250 * time.Millisecond, 1125 * time.Millisecond},
	{500 * time.Millisecond, 2250 * time.Millisecond},
}

// RampStage is a stage of WaitRamp: reads every Interval for Length.
type RampStage struct{ Interval, Length time.Duration }

// Ramp runs a wait of timeout in the stages of WaitRamp that are faster than
// interval and fit in timeout, then in one last stage of interval for the
// time left. stage waits for one stage and says whether it ended for lack
// of time; the first stage that ends otherwise (done, or failed) ends Ramp
// with its error, and so does the last stage.
func Ramp(timeout, interval time.Duration, stage func(RampStage) (outOfTime bool, err error)) error {
	start := time.Now()
	for _, st := range WaitRamp {
		if st.Interval >= interval || st.Length >= timeout-time.Since(start) {
			break
		}
		if over, err := stage(st); !over {
			return err
		}
	}
	_, err := stage(RampStage{Interval: interval, Length: timeout - time.Since(start)})
	return err
}

// Wait blocks until every object in entries is Current by kstatus, or returns an
// error naming the objects that are not. The reads follow WaitRamp, then
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
	return Ramp(o.Timeout, o.Interval, func(st RampStage) (bool, error) {
		so := o
		so.Interval, so.Timeout = st.Interval, st.Length
		sctx, cancel := context.WithTimeout(ctx, st.Length)
		defer cancel()
		deadline, _ := sctx.Deadline()
		err := m.rm.WaitForSetWithContext(sctx, set, so)
		// A Failed object ends a stage early, so this is not it.
		return err != nil && ctx.Err() == nil && (errors.Is(sctx.Err(), context.DeadlineExceeded) || !time.Now().Before(deadline)), err
	})
}
