package inputs

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-github/v73/github"
)

// maxPages bounds pagination against a host that never stops.
const maxPages = 1000

// fetchGitHub lists the pull requests (open), branches or tags of the
// repository through go-github, against api.github.com for github.com and
// <host>/api/v3 (GitHub Enterprise) otherwise, as flux-operator does.
func fetchGitHub(ctx context.Context, s Spec, k kind) ([]result, error) {
	base, owner, repo, err := parseGitHubURL(s.URL)
	if err != nil {
		return nil, err
	}
	hc, err := s.Auth.httpClient()
	if err != nil {
		return nil, err
	}
	c := github.NewClient(hc)
	if base != "https://github.com" {
		if c, err = c.WithEnterpriseURLs(base, base); err != nil {
			return nil, fmt.Errorf("GitHub client: %w", err)
		}
	}
	if tok := s.Auth.gitToken(); tok != "" {
		c = c.WithAuthToken(tok)
	}
	switch k {
	case kindRequest:
		return githubPullRequests(ctx, c, owner, repo, s.Filter)
	case kindBranch:
		return githubBranches(ctx, c, owner, repo, s.Filter)
	default:
		return githubTags(ctx, c, owner, repo, s.Filter)
	}
}

func githubPullRequests(ctx context.Context, c *github.Client, owner, repo string, f Filter) ([]result, error) {
	m := f.branchMatcher()
	opts := &github.PullRequestListOptions{State: "open", ListOptions: github.ListOptions{PerPage: 100}}
	var out []result
	for range maxPages {
		prs, resp, err := c.PullRequests.List(ctx, owner, repo, opts)
		if err != nil {
			return nil, fmt.Errorf("list the pull requests of %s/%s: %w", owner, repo, err)
		}
		for _, pr := range prs {
			if !m.match(pr.GetHead().GetRef()) {
				continue
			}
			labels := make([]string, 0, len(pr.Labels))
			for _, l := range pr.Labels {
				labels = append(labels, l.GetName())
			}
			if !f.hasLabels(labels) {
				continue
			}
			out = append(out, result{
				id: strconv.Itoa(pr.GetNumber()), number: int64(pr.GetNumber()),
				sha: pr.GetHead().GetSHA(), branch: pr.GetHead().GetRef(),
				title: pr.GetTitle(), author: pr.GetUser().GetLogin(), labels: labels,
			})
			if len(out) == f.limit() {
				return sortRequests(out), nil
			}
		}
		if resp.NextPage == 0 {
			return sortRequests(out), nil
		}
		opts.Page = resp.NextPage
	}
	return nil, fmt.Errorf("list the pull requests of %s/%s: more than %d pages", owner, repo, maxPages)
}

func githubBranches(ctx context.Context, c *github.Client, owner, repo string, f Filter) ([]result, error) {
	m := f.branchMatcher()
	opts := &github.BranchListOptions{ListOptions: github.ListOptions{PerPage: 100}}
	var out []result
	for range maxPages {
		branches, resp, err := c.Repositories.ListBranches(ctx, owner, repo, opts)
		if err != nil {
			return nil, fmt.Errorf("list the branches of %s/%s: %w", owner, repo, err)
		}
		for _, b := range branches {
			if !m.match(b.GetName()) {
				continue
			}
			out = append(out, result{id: ID(b.GetName()), sha: b.GetCommit().GetSHA(), branch: b.GetName()})
			if len(out) == f.limit() {
				return sortBranches(out), nil
			}
		}
		if resp.NextPage == 0 {
			return sortBranches(out), nil
		}
		opts.Page = resp.NextPage
	}
	return nil, fmt.Errorf("list the branches of %s/%s: more than %d pages", owner, repo, maxPages)
}

func githubTags(ctx context.Context, c *github.Client, owner, repo string, f Filter) ([]result, error) {
	opts := &github.ListOptions{PerPage: 100}
	sha := map[string]string{}
	var names []string
	for range maxPages {
		tags, resp, err := c.Repositories.ListTags(ctx, owner, repo, opts)
		if err != nil {
			return nil, fmt.Errorf("list the tags of %s/%s: %w", owner, repo, err)
		}
		for _, t := range tags {
			names = append(names, t.GetName())
			sha[t.GetName()] = t.GetCommit().GetSHA()
		}
		if resp.NextPage == 0 {
			var out []result
			for _, t := range selectTags(names, f) {
				out = append(out, result{id: ID(t), sha: sha[t], tag: t})
			}
			return out, nil
		}
		opts.Page = resp.NextPage
	}
	return nil, fmt.Errorf("list the tags of %s/%s: more than %d pages", owner, repo, maxPages)
}

// sortRequests orders change requests by number, newest first: the order
// both hosts list open ones in by default, whatever order a page came in.
func sortRequests(rs []result) []result {
	slices.SortFunc(rs, func(a, b result) int {
		if a.number != b.number {
			if a.number > b.number {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	return rs
}

// sortBranches orders branches by name, the order both hosts list them in.
func sortBranches(rs []result) []result {
	slices.SortFunc(rs, func(a, b result) int { return strings.Compare(a.branch, b.branch) })
	return rs
}
