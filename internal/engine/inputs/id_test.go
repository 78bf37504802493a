package inputs

import "testing"

// flux-operator's docs show id "48955639" for the tag 6.0.4.
func TestID_matchesFluxOperator(t *testing.T) {
	for in, want := range map[string]string{"6.0.4": "48955639", "": "1", "main": ID("main")} {
		if got := ID(in); got != want {
			t.Errorf("ID(%q) = %s, want %s", in, got, want)
		}
	}
}
