package inputs

import (
	"slices"
	"testing"
)

func TestSelectTags_sortFilterAndLimit(t *testing.T) {
	tags := []string{"1.0.0", "v1.2.0", "1.10.0", "latest", "2.0.0-rc.1", "1.2", "v1.0.0", "1.10.0"}
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"reverse lexical without semver", Filter{}, []string{"v1.2.0", "v1.0.0", "latest", "2.0.0-rc.1", "1.2", "1.10.0", "1.0.0"}},
		{"semver highest first, strict with optional v, equal versions in lexical order", Filter{Semver: ">=1.0.0"},
			[]string{"1.10.0", "v1.2.0", "1.0.0", "v1.0.0"}},
		{"prereleases only when the constraint asks", Filter{Semver: ">=2.0.0-0"}, []string{"2.0.0-rc.1"}},
		{"limit", Filter{Semver: "*", Limit: 1}, []string{"1.10.0"}},
		{"include and exclude", Filter{IncludeTag: `^v`, ExcludeTag: `^v1\.0`}, []string{"v1.2.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := selectTags(slices.Clone(tags), tc.f); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSelectTags_semverAsFlux: flux-operator reads a tag with
// fluxcd/pkg/version.ParseVersion (strict semver, an optional leading v), so
// a tag with a leading zero (01.0.0) or fewer than three numbers is never
// selected by a semver filter, and the constraint with Masterminds/semver's
// NewConstraint, which reads `>=01.0` as >=1.0.0.
func TestSelectTags_semverAsFlux(t *testing.T) {
	tags := []string{"01.0.0", "1.01.0", "v1.0", "1.0.0", "v1.0.1", "v01.2.0", "1.1.0+build.01"}
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"leading zeros and short versions are not versions", Filter{Semver: ">=1.0.0"}, []string{"1.1.0+build.01", "v1.0.1", "1.0.0"}},
		{"a constraint with leading zeros", Filter{Semver: ">=01.0"}, []string{"1.1.0+build.01", "v1.0.1", "1.0.0"}},
		{"without semver every tag", Filter{}, []string{"v1.0.1", "v1.0", "v01.2.0", "1.1.0+build.01", "1.01.0", "1.0.0", "01.0.0"}},
	} {
		if errs := (Spec{Type: TypeOCIArtifactTag, URL: "oci://r.example/app", Filter: tc.f}).Validate(); len(errs) > 0 {
			t.Fatalf("%s: %v", tc.name, errs)
		}
		t.Run(tc.name, func(t *testing.T) {
			if got := selectTags(slices.Clone(tags), tc.f); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSkip_dropsByLabelAndMissingLabel(t *testing.T) {
	rs := []result{
		{id: "1", labels: []string{"ready"}},
		{id: "2", labels: []string{"ready", "pause"}},
		{id: "3"},
	}
	got := skip(slices.Clone(rs), []string{"pause", "!ready"})
	if len(got) != 1 || got[0].id != "1" {
		t.Errorf("got %v, want only #1", got)
	}
}

func TestGitLabSlug_lowercaseDashedAtMost63(t *testing.T) {
	for in, want := range map[string]string{
		"feat/New_UI": "feat-new-ui",
		"-v1.2.3-":    "v1-2-3",
		"x/":          "x",
	} {
		if got := gitlabSlug(in); got != want {
			t.Errorf("gitlabSlug(%q) = %q, want %q", in, got, want)
		}
	}
	long := ""
	for range 70 {
		long += "a"
	}
	if got := gitlabSlug(long); len(got) != 63 {
		t.Errorf("slug of 70 bytes has %d, want 63", len(got))
	}
}
