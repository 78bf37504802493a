package kube

import (
	"errors"
	"regexp"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FieldConflict is a field of an object that another field manager owns,
// which a server-side apply would take (force) or be refused over.
type FieldConflict struct {
	// ID is the object's inventory ID.
	ID string
	// Field is the field path as the API server names it (`.spec.replicas`).
	Field string
	// Manager is the field manager that owns it.
	Manager string
}

var conflictManager = regexp.MustCompile(`conflict with "([^"]*)"`)

// ApplyConflicts are the field conflicts a server-side apply of the object
// id was refused over (the causes of a 409 Conflict), sorted by field; none
// when err is no such refusal. Conflicts with a manager in skip are left
// out.
func ApplyConflicts(id string, err error, skip ...string) []FieldConflict {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || !apierrors.IsConflict(err) {
		return nil
	}
	st := se.Status()
	if st.Details == nil {
		return nil
	}
	var out []FieldConflict
	for _, c := range st.Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		m := conflictManager.FindStringSubmatch(c.Message)
		if m == nil {
			continue
		}
		if slices.Contains(skip, m[1]) {
			continue
		}
		out = append(out, FieldConflict{ID: id, Field: c.Field, Manager: m[1]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}
