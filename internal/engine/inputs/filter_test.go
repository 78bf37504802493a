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
		{"reverse lexical without semver, duplicates kept", Filter{},
			[]string{"v1.2.0", "v1.0.0", "latest", "2.0.0-rc.1", "1.2", "1.10.0", "1.10.0", "1.0.0"}},
		{"semver highest first, equal versions in listed order, duplicates kept", Filter{Semver: ">=1.0.0"},
			[]string{"1.10.0", "1.10.0", "v1.2.0", "1.0.0", "v1.0.0"}},
		{"prereleases only when the constraint asks", Filter{Semver: ">=2.0.0-0"}, []string{"2.0.0-rc.1"}},
		{"limit", Filter{Semver: "*", Limit: 1}, []string{"1.10.0"}},
		{"limit cuts between duplicates", Filter{Semver: "*", Limit: 3}, []string{"1.10.0", "1.10.0", "v1.2.0"}},
		{"limit without semver", Filter{Limit: 2}, []string{"v1.2.0", "v1.0.0"}},
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
// fluxcd/pkg/version.ParseVersion: three dot-separated parts, then
// Masterminds/semver's loose NewVersion, so a leading v and leading zeros in
// the three numbers are read (01.0.0 is 1.0.0, 1.01.0 is 1.1.0, v01.2.0 is
// 1.2.0), while fewer or more than three numbers, or a numeric prerelease
// with a leading zero, are not versions. The constraint is Masterminds'
// NewConstraint, which reads `>=01.0` as >=1.0.0. Tags of equal precedence
// keep the order they were listed in; a tag listed twice is selected twice.
func TestSelectTags_semverAsFlux(t *testing.T) {
	tags := []string{"01.0.0", "1.01.0", "v1.0", "1.0.0", "v1.0.1", "v01.2.0", "1.1.0+build.01", "1.2", "1.0.0.0", "1.2.3-01", "V1.3.0"}
	for _, tc := range []struct {
		name string
		tags []string // tags when not the shared list
		f    Filter
		want []string
	}{
		{"leading zeros are versions, short and long ones are not", nil, Filter{Semver: ">=1.0.0"},
			[]string{"v01.2.0", "1.01.0", "1.1.0+build.01", "v1.0.1", "01.0.0", "1.0.0"}},
		{"any version", nil, Filter{Semver: "*"},
			[]string{"v01.2.0", "1.01.0", "1.1.0+build.01", "v1.0.1", "01.0.0", "1.0.0"}},
		{"a constraint with leading zeros", nil, Filter{Semver: ">=01.0"},
			[]string{"v01.2.0", "1.01.0", "1.1.0+build.01", "v1.0.1", "01.0.0", "1.0.0"}},
		{"01.0.0 is 1.0.0", nil, Filter{Semver: "=1.0.0"}, []string{"01.0.0", "1.0.0"}},
		{"1.01.0 is 1.1.0", nil, Filter{Semver: "~1.1.0"}, []string{"1.01.0", "1.1.0+build.01"}},
		{"v01.2.0 is 1.2.0", nil, Filter{Semver: "^1.2.0"}, []string{"v01.2.0"}},
		{"without semver every tag", nil, Filter{},
			[]string{"v1.0.1", "v1.0", "v01.2.0", "V1.3.0", "1.2.3-01", "1.2", "1.1.0+build.01", "1.01.0", "1.0.0.0", "1.0.0", "01.0.0"}},
		{"equal precedence in listed order: v1.0.0 before 1.0.0", []string{"v1.0.0", "1.0.0", "1.0.0+b"}, Filter{Semver: "*"},
			[]string{"v1.0.0", "1.0.0", "1.0.0+b"}},
		{"equal precedence in listed order: 1.0.0 before v1.0.0", []string{"1.0.0+b", "1.0.0", "v1.0.0"}, Filter{Semver: "*"},
			[]string{"1.0.0+b", "1.0.0", "v1.0.0"}},
		{"duplicates kept with semver", []string{"v1.0.0", "1.0.0", "v1.0.0", "2.0.0", "2.0.0"}, Filter{Semver: "*"},
			[]string{"2.0.0", "2.0.0", "v1.0.0", "1.0.0", "v1.0.0"}},
		{"duplicates kept without semver", []string{"a", "b", "a"}, Filter{}, []string{"b", "a", "a"}},
	} {
		if errs := (Spec{Type: TypeOCIArtifactTag, URL: "oci://r.example/app", Filter: tc.f}).Validate(); len(errs) > 0 {
			t.Fatalf("%s: %v", tc.name, errs)
		}
		in := tags
		if tc.tags != nil {
			in = tc.tags
		}
		t.Run(tc.name, func(t *testing.T) {
			if got := selectTags(slices.Clone(in), tc.f); !slices.Equal(got, tc.want) {
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
