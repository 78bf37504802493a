package resourceset

import (
	"errors"
	"strings"
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// The objects refused for one cause (one owner, on one attribute) are one
// error, which names each object, their count, and the advice and the import
// ID once; other causes and other errors stay apart, in order.
func TestOneErrorPerCause(t *testing.T) {
	killed := kube.Owner{Kind: kube.OwnedBySet, Namespace: "ns", Name: "big", ID: "0123456789abcdef0123456789abcdef"}
	other := kube.Owner{Kind: kube.OwnedBySet, Namespace: "ns", Name: "a", ID: "fedcba9876543210fedcba9876543210"}
	namesake := func(obj string) error {
		return fielderr.Wrap("resources", &OwnershipError{ID: obj, Object: obj, Owner: killed, Namesake: true, ImportID: "ns/big"})
	}
	stale := &StalePlanError{Object: "ConfigMap/ns/late", Exists: true}
	errs := []error{
		namesake("ConfigMap/ns/cm-00"),
		fielderr.Wrap("resources", &OwnershipError{ID: "x", Object: "ConfigMap/ns/x", Owner: other}),
		namesake("ConfigMap/ns/cm-01"),
		stale,
		namesake("Deployment/ns/web"),
		fielderr.Wrap("resources_template", &OwnershipError{ID: "y", Object: "ConfigMap/ns/y", Owner: killed, Namesake: true, ImportID: "ns/big"}),
	}
	got := oneErrorPerCause(errs)
	if len(got) != 3 {
		t.Fatalf("%d errors, want 3 (the killed apply's, the other set's, the stale one):\n%v", len(got), errors.Join(got...))
	}
	msg := got[0].Error()
	// Its objects are on resources and resources_template: about the set.
	if fielderr.PathOf(got[0]) != "" ||
		!strings.HasPrefix(msg, "4 objects (ConfigMap/ns/cm-00, ConfigMap/ns/cm-01, Deployment/ns/web, ConfigMap/ns/y) are owned by stevedore_resourceset ns/big (owner "+killed.ID+")") ||
		strings.Count(msg, `"ns/big"`) != 1 || strings.Count(msg, "another instance of a set of this name") != 1 {
		t.Fatalf("merged error: %s", msg)
	}
	if fielderr.PathOf(got[1]) != "resources" || !strings.HasPrefix(got[1].Error(), "resources: ConfigMap/ns/x is owned by stevedore_resourceset ns/a") || got[2] != error(stale) {
		t.Fatalf("the other errors: %v", got[1:])
	}

	// One cause on one attribute stays on it.
	one := oneErrorPerCause([]error{namesake("ConfigMap/ns/cm-00"), namesake("ConfigMap/ns/cm-01")})
	if len(one) != 1 || fielderr.PathOf(one[0]) != "resources" || !strings.HasPrefix(one[0].Error(), "resources: 2 objects (ConfigMap/ns/cm-00, ConfigMap/ns/cm-01) are owned by") {
		t.Fatalf("one attribute: %v", one)
	}

	raced := oneErrorPerCause([]error{&OwnershipError{Object: "ConfigMap/ns/a", Owner: other, Raced: true}, &OwnershipError{Object: "ConfigMap/ns/b", Owner: other, Raced: true}})
	if len(raced) != 1 || !strings.HasPrefix(raced[0].Error(), "2 objects (ConfigMap/ns/a, ConfigMap/ns/b) were taken by stevedore_resourceset ns/a (owner "+other.ID+") while this apply was taking them; this apply wrote nothing to them") {
		t.Fatalf("raced: %v", raced)
	}
}
