package chart

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// ValidateConstraint reports whether s is an exact version or a semver
// constraint Masterminds/semver understands.
func ValidateConstraint(s string) error {
	if s == "" || s == "*" {
		return nil
	}
	if _, err := semver.NewConstraint(s); err != nil {
		return fmt.Errorf("%q is not a semver constraint: %w", s, err)
	}
	return nil
}

// parseVersion is fluxcd/pkg/version.ParseVersion: strict semver, with an
// optional leading "v".
func parseVersion(s string) (*semver.Version, error) {
	if _, err := semver.StrictNewVersion(strings.TrimPrefix(s, "v")); err != nil {
		return nil, err
	}
	return semver.NewVersion(s)
}

// constraintFor returns the constraint of ver; "" and "*" mean the highest
// stable version, which is what semver's "*" matches.
func constraintFor(ver string) (*semver.Constraints, error) {
	if ver == "" || ver == "*" {
		return semver.NewConstraint("*")
	}
	return semver.NewConstraint(ver)
}

// selectEntry picks the entry of a chart's index versions that ver selects,
// as source-controller's ChartRepository.GetChartVersion does: an exact
// string match first; otherwise the highest version satisfying the
// constraint ("" or "*" exclude prereleases), equal versions (which differ in
// build metadata only) ordered by their `created` time, newest first.
func selectEntry(name string, entries []Entry, ver string) (*Entry, error) {
	if len(entries) == 0 {
		return nil, notFound(fmt.Errorf("no '%s' chart in the repository index", name))
	}
	if ver != "" {
		for i := range entries {
			if entries[i].Version == ver {
				return &entries[i], nil
			}
		}
	}
	c, err := constraintFor(ver)
	if err != nil {
		return nil, fmt.Errorf("invalid version constraint '%s': %w", ver, err)
	}
	var (
		best        *Entry
		bestVersion *semver.Version
	)
	for i := range entries {
		e := &entries[i]
		v, err := parseVersion(e.Version)
		if err != nil || !c.Check(v) {
			continue
		}
		if best == nil {
			best, bestVersion = e, v
			continue
		}
		switch cmp := v.Compare(bestVersion); {
		case cmp > 0, cmp == 0 && e.Created.After(best.Created):
			best, bestVersion = e, v
		}
	}
	if best == nil {
		return nil, notFound(fmt.Errorf("no '%s' chart with version matching '%s' found", name, ver))
	}
	return best, nil
}

// selectTag picks the OCI tag ver selects, as source-controller's
// getLastMatchingVersionOrConstraint does. tags are already `+` versions
// (Helm's registry client turns `_` back into `+`).
func selectTag(name string, tags []string, ver string) (string, error) {
	entries := make([]Entry, len(tags))
	for i, t := range tags {
		entries[i] = Entry{Version: t}
	}
	if len(entries) == 0 {
		return "", notFound(fmt.Errorf("unable to locate any tags in repository of chart '%s'", name))
	}
	e, err := selectEntry(name, entries, ver)
	if err != nil {
		return "", err
	}
	return e.Version, nil
}

// isExactVersion reports whether ver names one version (OCI pulls it without
// listing tags).
func isExactVersion(ver string) bool {
	_, err := parseVersion(ver)
	return err == nil
}
