package chart

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func entries(versions ...string) []Entry {
	out := make([]Entry, len(versions))
	for i, v := range versions {
		out[i] = Entry{Version: v}
	}
	return out
}

func TestSelectEntry_highestMatchingVersion(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		versions []Entry
		ver      string
		want     string
		wantErr  string
	}{
		{name: "empty means highest stable", versions: entries("1.0.0", "1.2.0", "1.10.0", "2.0.0-rc.1"), ver: "", want: "1.10.0"},
		{name: "star means highest stable", versions: entries("1.0.0", "2.0.0-rc.1", "1.1.0"), ver: "*", want: "1.1.0"},
		{name: "range", versions: entries("1.0.0", "1.1.0", "1.2.3", "2.0.0"), ver: "1.x", want: "1.2.3"},
		{name: "tilde", versions: entries("1.0.0", "1.0.7", "1.1.0"), ver: "~1.0.0", want: "1.0.7"},
		{name: "prerelease asked for", versions: entries("1.0.0", "2.0.0-rc.1", "2.0.0-rc.2"), ver: ">=2.0.0-0", want: "2.0.0-rc.2"},
		{name: "exact string match first", versions: entries("1.0.0", "v1.0.0", "1.1.0"), ver: "v1.0.0", want: "v1.0.0"},
		{name: "exact non-semver match", versions: entries("1.0.0", "latest"), ver: "latest", want: "latest"},
		{name: "leading v accepted", versions: entries("v1.0.0", "v1.3.0"), ver: "1.x", want: "v1.3.0"},
		{name: "lenient versions are skipped", versions: entries("1.0", "1.0.0"), ver: "*", want: "1.0.0"},
		{
			name:     "no match",
			versions: entries("1.0.0", "1.1.0"),
			ver:      "9.*",
			wantErr:  "no 'podinfo' chart with version matching '9.*' found",
		},
		{name: "no versions", versions: nil, ver: "*", wantErr: "no 'podinfo' chart in the repository index"},
		{name: "bad constraint", versions: entries("1.0.0"), ver: ">>1", wantErr: "invalid version constraint '>>1'"},
		{
			name: "equal versions ordered by created",
			versions: []Entry{
				{Version: "1.0.0+b", Created: base.Add(2 * time.Hour)},
				{Version: "1.0.0+a", Created: base.Add(3 * time.Hour)},
				{Version: "1.0.0+c", Created: base.Add(1 * time.Hour)},
				{Version: "0.9.0", Created: base.Add(5 * time.Hour)},
			},
			ver:  "1.0.0",
			want: "1.0.0+a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := selectEntry("podinfo", tt.versions, tt.ver)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != tt.want {
				t.Fatalf("selected %s, want %s", got.Version, tt.want)
			}
		})
	}
}

func TestSelectEntry_errorIsNotFound(t *testing.T) {
	_, err := selectEntry("podinfo", entries("1.0.0"), "9.*")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("%v is not ErrNotFound", err)
	}
	if got, want := err.Error(), "no 'podinfo' chart with version matching '9.*' found"; !strings.HasPrefix(got, want) {
		t.Fatalf("error %q does not start with Flux's text %q", got, want)
	}
}

func TestSelectTag_highestMatchingTag(t *testing.T) {
	tags := []string{"2.0.0-rc.1", "1.1.0+build.2", "1.1.0", "1.0.0"}
	for ver, want := range map[string]string{
		"":              "1.1.0+build.2",
		"*":             "1.1.0+build.2",
		"1.0.x":         "1.0.0",
		"1.1.0":         "1.1.0",
		"1.1.0+build.2": "1.1.0+build.2",
		">=2.0.0-0":     "2.0.0-rc.1",
	} {
		got, err := selectTag("podinfo", tags, ver)
		if err != nil {
			t.Fatalf("%q: %v", ver, err)
		}
		if got != want && !(ver == "" || ver == "*") {
			t.Errorf("%q: got %s, want %s", ver, got, want)
		}
		if (ver == "" || ver == "*") && got != "1.1.0" && got != "1.1.0+build.2" {
			t.Errorf("%q: got %s, want 1.1.0 with or without build metadata", ver, got)
		}
	}
	if _, err := selectTag("podinfo", nil, "*"); err == nil || !strings.Contains(err.Error(), "unable to locate any tags") {
		t.Fatalf("no tags: %v", err)
	}
	if _, err := selectTag("podinfo", tags, "3.x"); err == nil || !strings.Contains(err.Error(), "no 'podinfo' chart with version matching '3.x' found") {
		t.Fatalf("no match: %v", err)
	}
}

func TestIsExactVersion_fullSemverOnly(t *testing.T) {
	for v, want := range map[string]bool{"1.0.0": true, "v1.0.0": true, "1.0.0+abc": true, "1.0.0-rc.1": true, "1.0": false, "1.x": false, "*": false, "": false, ">=1.0.0": false} {
		if got := isExactVersion(v); got != want {
			t.Errorf("isExactVersion(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestSpecValidate_rejectsInvalidCombinations(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{}, "one of repository or source_path is required"},
		{Spec{Repository: "https://x", SourcePath: "."}, "mutually exclusive"},
		{Spec{Repository: "ftp://x", Chart: "a"}, `scheme "ftp" is not supported`},
		{Spec{Repository: "https://x"}, "chart: the chart name is required"},
		{Spec{Repository: "oci://r/charts/podinfo:1.0.0", Chart: "podinfo"}, "must not carry a tag or digest"},
		{Spec{Repository: "oci://r/charts@sha256:abc", Chart: "podinfo"}, "must not carry a tag or digest"},
		{Spec{Repository: "https://x", Chart: "a", Version: ">>1"}, "version:"},
		{Spec{Repository: "https://x", Chart: "a", ValuesFiles: []string{"../x.yaml"}}, "outside the chart source"},
		{Spec{Repository: "https://x", Chart: "a", ValuesFiles: []string{"/etc/x.yaml"}}, "must be relative"},
		{Spec{Repository: "https://x", Chart: "a", Verify: &Verify{Provider: "cosign"}}, "only OCI charts carry signatures"},
		{Spec{Repository: "oci://x/c", Chart: "a", Verify: &Verify{Provider: "sigstore"}}, `"sigstore" is not supported: use cosign or notation`},
		{Spec{Repository: "oci://x/c", Chart: "a", Verify: &Verify{Provider: "notation"}}, "notation verification needs the trust policy document"},
		{Spec{Repository: "https://x", Chart: "a", ReconcileStrategy: "Revision"}, "Revision applies to source_path only"},
		{Spec{SourcePath: ".", ReconcileStrategy: "Often"}, "is not one of ChartVersion, Revision"},
	}
	for _, tt := range tests {
		err := tt.spec.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want one containing %q", tt.spec, err, tt.want)
		}
	}
	ok := []Spec{
		{Repository: "https://x/charts", Chart: "podinfo", Version: "1.x"},
		{Repository: "oci://x/charts", Chart: "podinfo", Version: "*", Verify: &Verify{Provider: "cosign"}},
		{SourcePath: "./chart", ReconcileStrategy: "Revision", ValuesFiles: []string{"values-prod.yaml"}},
	}
	for _, s := range ok {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

func TestWithMetadata_replacesBuildMetadata(t *testing.T) {
	for _, tt := range []struct{ v, meta, want string }{
		{"1.0.0", "", "1.0.0"},
		{"1.0.0", "abcdef012345", "1.0.0+abcdef012345"},
		{"1.0.0+old", "abcdef012345", "1.0.0+abcdef012345"},
		{"1.0.0-rc.1", "aa.bb", "1.0.0-rc.1+aa.bb"},
	} {
		got, err := withMetadata(tt.v, tt.meta)
		if err != nil || got != tt.want {
			t.Errorf("withMetadata(%q, %q) = %q, %v; want %q", tt.v, tt.meta, got, err, tt.want)
		}
	}
}
