package inputs

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// fetchGitLab lists the merge requests (opened), branches or tags of the
// project through GitLab's client-go, against <host>/api/v4.
func fetchGitLab(ctx context.Context, s Spec, k kind) ([]result, error) {
	base, project, err := parseGitLabURL(s.URL)
	if err != nil {
		return nil, err
	}
	hc, err := s.Auth.httpClient()
	if err != nil {
		return nil, err
	}
	c, err := gitlab.NewClient(s.Auth.gitToken(), gitlab.WithBaseURL(base), gitlab.WithHTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("GitLab client: %w", err)
	}
	switch k {
	case kindRequest:
		return gitlabMergeRequests(ctx, c, project, s.Filter)
	case kindBranch:
		return gitlabBranches(ctx, c, project, s.Filter)
	default:
		return gitlabTags(ctx, c, project, s.Filter)
	}
}

func gitlabMergeRequests(ctx context.Context, c *gitlab.Client, project string, f Filter) ([]result, error) {
	m := f.branchMatcher()
	state := "opened"
	opts := &gitlab.ListProjectMergeRequestsOptions{State: &state, ListOptions: gitlab.ListOptions{PerPage: 100}}
	if len(f.Labels) > 0 {
		labels := gitlab.LabelOptions(f.Labels)
		opts.Labels = &labels
	}
	var out []result
	for range maxPages {
		mrs, resp, err := c.MergeRequests.ListProjectMergeRequests(project, opts, gitlab.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("list the merge requests of %s: %w", project, err)
		}
		for _, mr := range mrs {
			// GitLab filters by labels; checked here too.
			if !m.match(mr.SourceBranch) || !f.hasLabels(mr.Labels) {
				continue
			}
			author := ""
			if mr.Author != nil {
				author = mr.Author.Username
			}
			out = append(out, result{
				id: strconv.Itoa(mr.IID), number: int64(mr.IID), sha: mr.SHA,
				branch: mr.SourceBranch, slug: gitlabSlug(mr.SourceBranch),
				title: mr.Title, author: author, labels: mr.Labels,
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
	return nil, fmt.Errorf("list the merge requests of %s: more than %d pages", project, maxPages)
}

func gitlabBranches(ctx context.Context, c *gitlab.Client, project string, f Filter) ([]result, error) {
	m := f.branchMatcher()
	opts := &gitlab.ListBranchesOptions{ListOptions: gitlab.ListOptions{PerPage: 100}}
	var out []result
	for range maxPages {
		branches, resp, err := c.Branches.ListBranches(project, opts, gitlab.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("list the branches of %s: %w", project, err)
		}
		for _, b := range branches {
			if !m.match(b.Name) {
				continue
			}
			out = append(out, result{id: ID(b.Name), sha: commitID(b.Commit), branch: b.Name, slug: gitlabSlug(b.Name)})
			if len(out) == f.limit() {
				return sortBranches(out), nil
			}
		}
		if resp.NextPage == 0 {
			return sortBranches(out), nil
		}
		opts.Page = resp.NextPage
	}
	return nil, fmt.Errorf("list the branches of %s: more than %d pages", project, maxPages)
}

func gitlabTags(ctx context.Context, c *gitlab.Client, project string, f Filter) ([]result, error) {
	opts := &gitlab.ListTagsOptions{ListOptions: gitlab.ListOptions{PerPage: 100}}
	sha := map[string]string{}
	var names []string
	for range maxPages {
		tags, resp, err := c.Tags.ListTags(project, opts, gitlab.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("list the tags of %s: %w", project, err)
		}
		for _, t := range tags {
			names = append(names, t.Name)
			sha[t.Name] = commitID(t.Commit)
		}
		if resp.NextPage == 0 {
			var out []result
			for _, t := range selectTags(names, f) {
				out = append(out, result{id: ID(t), sha: sha[t], tag: t, slug: gitlabSlug(t)})
			}
			return out, nil
		}
		opts.Page = resp.NextPage
	}
	return nil, fmt.Errorf("list the tags of %s: more than %d pages", project, maxPages)
}

func commitID(c *gitlab.Commit) string {
	if c == nil {
		return ""
	}
	return c.ID
}

var nonSlug = regexp.MustCompile(`[^a-z0-9-]`)

// gitlabSlug is GitLab's CI_COMMIT_REF_SLUG of a ref: lower case, every
// character but a-z, 0-9 and - replaced by -, at most 63 bytes, no leading
// or trailing -.
func gitlabSlug(ref string) string {
	s := nonSlug.ReplaceAllString(strings.ToLower(ref), "-")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-")
}
