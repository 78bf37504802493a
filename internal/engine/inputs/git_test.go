package inputs

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/inputs/inputstest"
)

var (
	testRequests = []inputstest.ChangeRequest{
		{Number: 1, Title: "old", Author: "ann", Branch: "feat/old", SHA: "a1", Closed: true},
		{Number: 2, Title: "Add UI", Author: "bob", Branch: "feat/UI", SHA: "b2", Labels: []string{"preview"}},
		{Number: 3, Title: "Fix", Author: "cy", Branch: "fix/x", SHA: "c3", Labels: []string{"preview", "pause"}},
		{Number: 4, Title: "Docs", Author: "dee", Branch: "docs", SHA: "d4"},
		{Number: 10, Title: "Ten", Author: "eve", Branch: "feat/ten", SHA: "e10", Labels: []string{"preview"}},
	}
	testBranches = []inputstest.Ref{{Name: "feat/a", SHA: "1"}, {Name: "main", SHA: "2"}, {Name: "feat/b", SHA: "3"}, {Name: "wip/c", SHA: "4"}}
	testTags     = []inputstest.Ref{{Name: "v1.0.0", SHA: "t1"}, {Name: "v1.10.0", SHA: "t2"}, {Name: "v1.9.0", SHA: "t3"}, {Name: "nightly", SHA: "t4"},
		{Name: "01.0.0", SHA: "t5"}, {Name: "1.0.0", SHA: "t6"}, {Name: "01.0.0", SHA: "t7"}}
)

type gitCase struct {
	name string
	typ  string
	f    Filter
	skip []string
	want []map[string]any
}

func gitCases(prefix string, slug bool) []gitCase {
	s := func(m map[string]any, ref string) map[string]any {
		if slug {
			m["slug"] = gitlabSlug(ref)
		}
		m["env"] = "preview"
		return m
	}
	req := prefix + map[bool]string{true: "MergeRequest", false: "PullRequest"}[slug]
	return []gitCase{
		{"requests: open, newest first, labels", req, Filter{Labels: []string{"preview"}}, nil, []map[string]any{
			s(map[string]any{"id": "10", "sha": "e10", "branch": "feat/ten", "title": "Ten", "author": "eve", "labels": []any{"preview"}}, "feat/ten"),
			s(map[string]any{"id": "3", "sha": "c3", "branch": "fix/x", "title": "Fix", "author": "cy", "labels": []any{"preview", "pause"}}, "fix/x"),
			s(map[string]any{"id": "2", "sha": "b2", "branch": "feat/UI", "title": "Add UI", "author": "bob", "labels": []any{"preview"}}, "feat/UI"),
		}},
		{"requests: branch filter, skip, limit", req, Filter{IncludeBranch: "^f", ExcludeBranch: "ten", Limit: 2}, []string{"pause"}, []map[string]any{
			s(map[string]any{"id": "2", "sha": "b2", "branch": "feat/UI", "title": "Add UI", "author": "bob", "labels": []any{"preview"}}, "feat/UI"),
		}},
		{"branches by name", prefix + "Branch", Filter{ExcludeBranch: "^wip/"}, nil, []map[string]any{
			s(map[string]any{"id": ID("feat/a"), "sha": "1", "branch": "feat/a"}, "feat/a"),
			s(map[string]any{"id": ID("feat/b"), "sha": "3", "branch": "feat/b"}, "feat/b"),
			s(map[string]any{"id": ID("main"), "sha": "2", "branch": "main"}, "main"),
		}},
		{"tags by semver", prefix + "Tag", Filter{Semver: ">=1.0.0", Limit: 2}, nil, []map[string]any{
			s(map[string]any{"id": ID("v1.10.0"), "sha": "t2", "tag": "v1.10.0"}, "v1.10.0"),
			s(map[string]any{"id": ID("v1.9.0"), "sha": "t3", "tag": "v1.9.0"}, "v1.9.0"),
		}},
		// As flux-operator's tag selector: 01.0.0 is version 1.0.0, equal
		// versions keep the listed order, and a name listed twice is selected
		// twice, each with the last listing's commit.
		{"tags: loose versions, listed order, duplicates", prefix + "Tag", Filter{Semver: "<1.9.0"}, nil, []map[string]any{
			s(map[string]any{"id": ID("v1.0.0"), "sha": "t1", "tag": "v1.0.0"}, "v1.0.0"),
			s(map[string]any{"id": ID("01.0.0"), "sha": "t7", "tag": "01.0.0"}, "01.0.0"),
			s(map[string]any{"id": ID("1.0.0"), "sha": "t6", "tag": "1.0.0"}, "1.0.0"),
			s(map[string]any{"id": ID("01.0.0"), "sha": "t7", "tag": "01.0.0"}, "01.0.0"),
		}},
	}
}

func runGitCases(t *testing.T, url string, cases []gitCase, auth Auth) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{Type: tc.typ, URL: url, Filter: tc.f, SkipLabels: tc.skip, Auth: auth, DefaultValues: map[string]any{"env": "preview", "branch": "never-over-a-result"}}
			got, err := Fetch(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if tc.typ == TypeGitHubTag || tc.typ == TypeGitLabTag {
				for _, m := range tc.want {
					m["branch"] = "never-over-a-result"
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

// The fake serves two items a page, so every listing paginates.
func TestFetch_gitHubPaginatesAndAuthenticates(t *testing.T) {
	gh := inputstest.StartGitHub("org", "app", "s3cret", 2)
	defer gh.Close()
	gh.Set(testRequests, testBranches, testTags)
	runGitCases(t, gh.RepoURL(), gitCases("GitHub", false), Auth{Token: "s3cret"})

	t.Run("password is the token", func(t *testing.T) {
		if _, err := Fetch(context.Background(), Spec{Type: TypeGitHubTag, URL: gh.RepoURL(), Auth: Auth{Username: "x", Password: "s3cret"}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("bad token", func(t *testing.T) {
		_, err := Fetch(context.Background(), Spec{Type: TypeGitHubTag, URL: gh.RepoURL(), Auth: Auth{Token: "wrong"}})
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("want a 401, got %v", err)
		}
	})
}

func TestFetch_gitLabPaginatesAndAuthenticates(t *testing.T) {
	gl := inputstest.StartGitLab("group/sub/app", "s3cret", 2)
	defer gl.Close()
	gl.Set(testRequests, testBranches, testTags)
	runGitCases(t, gl.ProjectURL(), gitCases("GitLab", true), Auth{Token: "s3cret"})

	t.Run("bad token", func(t *testing.T) {
		_, err := Fetch(context.Background(), Spec{Type: TypeGitLabTag, URL: gl.ProjectURL(), Auth: Auth{Password: "wrong"}})
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("want a 401, got %v", err)
		}
	})
	t.Run("no such project", func(t *testing.T) {
		_, err := Fetch(context.Background(), Spec{Type: TypeGitLabTag, URL: gl.URL + "/other/app", Auth: Auth{Token: "s3cret"}})
		if err == nil || !strings.Contains(err.Error(), "404") {
			t.Fatalf("want a 404, got %v", err)
		}
	})
}
