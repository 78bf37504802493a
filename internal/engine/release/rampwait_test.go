package release

import (
	"context"
	"errors"
	"testing"
	"time"
)

// rampCalls makes the first calls of a Helm wait short (kube.WaitRamp), and
// the last Helm's own with the time left; a call that ends other than out of
// time ends the wait with its result.
func TestRampCalls(t *testing.T) {
	notFound := errors.New("resource gone")
	cases := []struct {
		name      string
		timeout   time.Duration
		readyAt   int   // the call (from 1) that finds the resources ready; 0: never
		fail      error // what every call returns instead, when not nil
		wantCalls func(n int) bool
		wantErr   error
	}{
		{name: "ready at the first read", timeout: time.Minute, readyAt: 1,
			wantCalls: func(n int) bool { return n == 1 }},
		{name: "ready at the third read, within the ramp", timeout: time.Minute, readyAt: 3,
			wantCalls: func(n int) bool { return n == 3 }},
		{name: "a failure ends the wait", timeout: time.Minute, fail: notFound, wantErr: notFound,
			wantCalls: func(n int) bool { return n == 1 }},
		{name: "never ready: the last call has the time left and its error is the wait's", timeout: 4 * time.Second,
			wantErr: context.DeadlineExceeded, wantCalls: func(n int) bool { return n >= 5 }},
		{name: "a timeout shorter than the ramp's first stage: Helm's call alone", timeout: time.Second,
			wantErr: context.DeadlineExceeded, wantCalls: func(n int) bool { return n == 1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var timeouts []time.Duration
			start := time.Now()
			err := rampCalls(tc.timeout, func(timeout time.Duration) error {
				timeouts = append(timeouts, timeout)
				switch {
				case tc.fail != nil:
					return tc.fail
				case len(timeouts) == tc.readyAt:
					return nil
				}
				time.Sleep(timeout) // Helm's call waits out its timeout
				return context.DeadlineExceeded
			})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !tc.wantCalls(len(timeouts)) {
				t.Fatalf("%d calls (timeouts %v)", len(timeouts), timeouts)
			}
			last := len(timeouts) - 1
			for i, d := range timeouts[:last] {
				if d >= legacyInterval {
					t.Errorf("call %d of %d had timeout %s: only the last may read at Helm's interval", i+1, len(timeouts), d)
				}
			}
			if tc.wantErr == context.DeadlineExceeded {
				if d := time.Since(start) - tc.timeout; d > time.Second || d < -time.Second {
					t.Errorf("the wait ended %s after its timeout", d)
				}
			}
		})
	}
}
