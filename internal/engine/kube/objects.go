package kube

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// OwnerGroup is the label and annotation domain of the objects we manage.
const OwnerGroup = "stevedore.dev"

// managerConcurrency bounds the parallel dry-runs of one apply or diff: enough to
// hide round trips, few enough to stay inside the client's QPS budget.
const managerConcurrency = 8

// Entry is one object of an inventory, in Flux's format: the ID is cli-utils'
// ObjMetadata string `<namespace>_<name>_<group>_<kind>` and V the API version
// the object was applied with.
type Entry struct {
	ID string
	V  string
	// Adopted marks an object that existed before the inventory's owner first
	// applied it: the owner did not create it, so it never deletes it, and
	// only takes its owner labels back when letting go of it.
	Adopted bool
}

// ID returns the inventory ID of obj.
func ID(obj *unstructured.Unstructured) string {
	return object.UnstructuredToObjMetadata(obj).String()
}

// EntryOf returns the inventory entry of obj.
func EntryOf(obj *unstructured.Unstructured) Entry {
	return Entry{ID: ID(obj), V: obj.GroupVersionKind().Version}
}

// Inventory returns the sorted, deduplicated entries of objs.
func Inventory(objs []*unstructured.Unstructured) []Entry {
	seen := make(map[string]bool, len(objs))
	out := make([]Entry, 0, len(objs))
	for _, o := range objs {
		e := EntryOf(o)
		if seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		out = append(out, e)
	}
	SortEntries(out)
	return out
}

// SortEntries orders entries by ID, as Flux stores its inventories.
func SortEntries(entries []Entry) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].ID < entries[j].ID })
}

// ObjectOf returns an object carrying only the identity of e (kind, API version,
// namespace, name): enough to get, delete or wait for it.
func ObjectOf(e Entry) (*unstructured.Unstructured, error) {
	m, err := object.ParseObjMetadata(e.ID)
	if err != nil {
		return nil, fmt.Errorf("inventory entry %q: %w", e.ID, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.GroupKind.WithVersion(e.V))
	u.SetNamespace(m.Namespace)
	u.SetName(m.Name)
	return u, nil
}

// Describe names obj as error messages and logs do: `Kind/namespace/name`.
func Describe(obj *unstructured.Unstructured) string {
	return utils.FmtUnstructured(obj)
}

// ReadObjects parses multi-document YAML or JSON into objects.
func ReadObjects(manifests string) ([]*unstructured.Unstructured, error) {
	return utils.ReadObjects(strings.NewReader(manifests))
}
