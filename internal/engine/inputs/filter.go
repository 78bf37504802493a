package inputs

import (
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
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

// parseVersion is Flux's tag version parsing: strict semver, with an
// optional leading v.
func parseVersion(tag string) (*semver.Version, error) {
	if _, err := semver.StrictNewVersion(strings.TrimPrefix(tag, "v")); err != nil {
		return nil, err
	}
	return semver.NewVersion(tag)
}

// selectTags is flux-operator's tag selection: include and exclude, then
// with a semver constraint the matching versions highest first, without one
// every tag in reverse lexical order; then the first `limit`. Tags of equal
// version precedence (1.0.0 and v1.0.0) keep lexical order, as the
// registry's listing gives them to flux-operator.
func selectTags(tags []string, f Filter) []string {
	m := f.tagMatcher()
	var filtered []string
	seen := map[string]bool{}
	for _, t := range tags {
		if !seen[t] && m.match(t) {
			seen[t] = true
			filtered = append(filtered, t)
		}
	}
	slices.Sort(filtered)
	if f.Semver != "" {
		c, _ := semver.NewConstraint(f.Semver)
		type tv struct {
			tag string
			v   *semver.Version
		}
		var vs []tv
		for _, t := range filtered {
			if v, err := parseVersion(t); err == nil && c.Check(v) {
				vs = append(vs, tv{t, v})
			}
		}
		slices.SortStableFunc(vs, func(a, b tv) int { return b.v.Compare(a.v) })
		filtered = filtered[:0]
		for _, x := range vs {
			filtered = append(filtered, x.tag)
		}
	} else {
		slices.Reverse(filtered)
	}
	if l := f.limit(); len(filtered) > l {
		filtered = filtered[:l]
	}
	return filtered
}
