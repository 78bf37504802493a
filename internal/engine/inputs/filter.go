package inputs

import (
	"regexp"
	"slices"

	"github.com/Masterminds/semver/v3"
	fluxversion "github.com/fluxcd/pkg/version"
)

// matcher is the include/exclude pair of regular expressions of a filter.
type matcher struct{ include, exclude *regexp.Regexp }

// branchMatcher and tagMatcher compile what Validate checked.
func (f Filter) branchMatcher() matcher { return newMatcher(f.IncludeBranch, f.ExcludeBranch) }
func (f Filter) tagMatcher() matcher    { return newMatcher(f.IncludeTag, f.ExcludeTag) }

func newMatcher(include, exclude string) matcher {
	var m matcher
	if include != "" {
		m.include = regexp.MustCompile(include)
	}
	if exclude != "" {
		m.exclude = regexp.MustCompile(exclude)
	}
	return m
}

func (m matcher) match(s string) bool {
	return (m.include == nil || m.include.MatchString(s)) && (m.exclude == nil || !m.exclude.MatchString(s))
}

// hasLabels reports whether labels hold every label of the filter.
func (f Filter) hasLabels(labels []string) bool {
	for _, l := range f.Labels {
		if !slices.Contains(labels, l) {
			return false
		}
	}
	return true
}

// selectTags is flux-operator's tag selection (its filtering.Filters.Tags
// for OCI tags, its gitprovider tag selector for Git tags, which rank the
// same): include and exclude, then with a semver constraint the tags that
// fluxcd/pkg/version.ParseVersion reads (three dot-separated parts, then
// Masterminds/semver's loose NewVersion: an optional v, leading zeros
// allowed) and the constraint admits, highest first, tags of equal
// precedence (1.0.0 and v1.0.0) in the order they were listed; without one
// every tag in reverse lexical order. A tag listed twice stays twice. Then
// the first `limit`.
func selectTags(tags []string, f Filter) []string {
	m := f.tagMatcher()
	var filtered []string
	for _, t := range tags {
		if m.match(t) {
			filtered = append(filtered, t)
		}
	}
	if f.Semver != "" {
		c, _ := semver.NewConstraint(f.Semver)
		type tv struct {
			tag string
			v   *semver.Version
		}
		var vs []tv
		for _, t := range filtered {
			if v, err := fluxversion.ParseVersion(t); err == nil && c.Check(v) {
				vs = append(vs, tv{t, v})
			}
		}
		slices.SortStableFunc(vs, func(a, b tv) int { return b.v.Compare(a.v) })
		filtered = filtered[:0]
		for _, x := range vs {
			filtered = append(filtered, x.tag)
		}
	} else {
		slices.Sort(filtered)
		slices.Reverse(filtered)
	}
	if l := f.limit(); len(filtered) > l {
		filtered = filtered[:l]
	}
	return filtered
}
