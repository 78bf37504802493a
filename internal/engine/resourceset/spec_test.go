package resourceset

import (
	"testing"
	"time"
)

// withDefaults fills in the timeout a set leaves unset, keeps the one it
// sets, and leaves the spec it was given alone; the steps' timeouts default
// to the set's.
func TestSpecWithDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Spec
		want time.Duration
	}{
		{name: "unset", in: Spec{Name: "web"}, want: DefaultTimeout},
		{name: "set", in: Spec{Name: "web", Timeout: time.Minute}, want: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Steps = []Step{{Name: "db"}, {Name: "app", Timeout: time.Second}}
			got := in.withDefaults()
			if got.Timeout != tc.want || got.Name != in.Name {
				t.Errorf("withDefaults = %+v, want timeout %s", got, tc.want)
			}
			if in.Timeout != tc.in.Timeout {
				t.Errorf("withDefaults changed the spec it was given: timeout %s", in.Timeout)
			}
			parts := got.parts()
			if parts[0].timeout != tc.want || parts[1].timeout != time.Second {
				t.Errorf("step timeouts %s, %s; want %s (the set's), 1s (its own)", parts[0].timeout, parts[1].timeout, tc.want)
			}
		})
	}
}
