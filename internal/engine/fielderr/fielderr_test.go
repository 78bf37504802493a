package fielderr

import (
	"errors"
	"fmt"
	"testing"
)

func TestError_textAndPathOfEachConstructor(t *testing.T) {
	cause := errors.New("must not be empty")
	for _, tc := range []struct {
		name      string
		err       error
		wantText  string
		wantPath  string
		wantFound bool
	}{
		{"error", Errorf("values_from[0].name", "must not be empty"), "values_from[0].name: must not be empty", "values_from[0].name", true},
		{"wrap", Wrap("timeout", cause), "timeout: must not be empty", "timeout", true},
		{"wrap keeps the inner path", Wrap("chart", Errorf("chart.path", "gone")), "chart.path: gone", "chart.path", true},
		{"under", Under("chart", Errorf(Index("values_files", 1), "not found")), "chart.values_files[1]: not found", "chart.values_files[1]", true},
		{"under, no attribute", Under("chart", cause), "chart: must not be empty", "chart", true},
		{"under, wrapped", Under("chart", fmt.Errorf("fetch: %w", Errorf("repository", "down"))), "chart.repository: fetch: repository: down", "chart.repository", true},
		{"object", Object("helmrelease", "ns/web", Errorf("name", "bad")), "helmrelease ns/web: name: bad", "name", true},
		{"object once", Object("helmrelease", "ns/web", Object("helmrelease", "ns/web", cause)), "helmrelease ns/web: must not be empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.wantText {
				t.Errorf("text %q, want %q", got, tc.wantText)
			}
			var fe *Error
			if found := errors.As(tc.err, &fe); found != tc.wantFound || found && fe.Path != tc.wantPath {
				t.Errorf("errors.As: %v %+v, want %v at %q", found, fe, tc.wantFound, tc.wantPath)
			}
		})
	}
	if Wrap("x", nil) != nil || Under("x", nil) != nil || Object("k", "n/m", nil) != nil {
		t.Error("nil error not kept nil")
	}
}
