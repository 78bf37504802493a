package inputs

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

func TestValidate_errorsNameTheField(t *testing.T) {
	oci := Spec{Type: TypeOCIArtifactTag, URL: "oci://registry.example/app"}
	gh := Spec{Type: TypeGitHubPullRequest, URL: "https://github.com/o/r"}
	for _, tc := range []struct {
		name  string
		spec  Spec
		field string
		msg   string
	}{
		{"unknown type", Spec{Type: "Nope"}, "type", "unknown type"},
		{"not yet supported", Spec{Type: "GiteaTag", URL: "https://x/o/r"}, "type", "does not support yet"},
		{"static with url", Spec{Type: TypeStatic, URL: "https://x"}, "url", "must not be set"},
		{"url missing", Spec{Type: TypeGitHubBranch}, "url", "required"},
		{"github url without repo", Spec{Type: TypeGitHubTag, URL: "https://github.com/o"}, "url", "owner"},
		{"git url scheme", Spec{Type: TypeGitLabTag, URL: "ssh://gitlab.com/g/p"}, "url", "http"},
		{"oci url scheme", Spec{Type: TypeOCIArtifactTag, URL: "https://r.example/app"}, "url", "oci://"},
		{"oci url without repository", Spec{Type: TypeOCIArtifactTag, URL: "oci://r.example"}, "url", "repository path"},
		{"bad semver", with(oci, func(s *Spec) { s.Filter.Semver = ">=foo" }), "filter.semver", "invalid semver"},
		{"bad regexp", with(gh, func(s *Spec) { s.Filter.IncludeBranch = "(" }), "filter.include_branch", "regular expression"},
		{"limit range", with(gh, func(s *Spec) { s.Filter.Limit = MaxLimit + 1 }), "filter.limit", "between"},
		{"semver on branches", Spec{Type: TypeGitHubBranch, URL: "https://github.com/o/r", Filter: Filter{Semver: "*"}}, "filter.semver", "does not apply"},
		{"labels on tags", with(oci, func(s *Spec) { s.Filter.Labels = []string{"a"} }), "filter.labels", "change requests"},
		{"skip on tags", with(oci, func(s *Spec) { s.SkipLabels = []string{"a"} }), "skip", "change requests"},
		{"insecure on git", with(gh, func(s *Spec) { s.Insecure = true }), "insecure", "OCIArtifactTag"},
		{"uid on git", with(gh, func(s *Spec) { s.UID = "x" }), "uid", "Static"},
		{"filter on static", Spec{Type: TypeStatic, Filter: Filter{Limit: 1}}, "filter", "Static"},
		{"token on static", Spec{Type: TypeStatic, Auth: Auth{Token: "t"}}, "token", "Static"},
		{"token and password", with(gh, func(s *Spec) { s.Auth = Auth{Token: "t", Password: "p"} }), "token", "conflicts"},
		{"oci username alone", with(oci, func(s *Spec) { s.Auth = Auth{Username: "u"} }), "password", "required"},
		{"bad ca", with(oci, func(s *Spec) { s.Auth = Auth{CACert: "nope"} }), "ca_cert", "PEM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.spec.Validate()
			for _, e := range errs {
				if e.Path == tc.field && strings.Contains(e.Err.Error(), tc.msg) {
					return
				}
			}
			t.Errorf("want an error on %s containing %q, got %v", tc.field, tc.msg, errs)
		})
	}
	for _, ok := range []Spec{oci, gh, {Type: TypeStatic, UID: "u"}, with(oci, func(s *Spec) { s.Filter = Filter{Semver: "^1", Limit: 3, IncludeTag: "^v"} })} {
		if errs := ok.Validate(); len(errs) > 0 {
			t.Errorf("%+v: %v", ok, errs)
		}
	}
}

func with(s Spec, f func(*Spec)) Spec { f(&s); return s }

func TestFetch_staticUIDAndDefaultValues(t *testing.T) {
	got, err := Fetch(context.Background(), Spec{Type: TypeStatic, UID: "6.0.4", DefaultValues: map[string]any{"env": "staging", "id": "ignored", "n": int64(1)}})
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"id": "48955639", "env": "staging", "n": int64(1)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
