package provider

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// fingerprintsKey is the private-state key of the fingerprints of the objects
// that the last drift check found in sync (kube.Fingerprints): Terraform
// keeps them with the state, out of plans and outputs, and the next refresh
// dry-runs only the objects written since.
const fingerprintsKey = "drift_fingerprints"

// privateReader and privateWriter are the framework's private state of a
// request and of a response.
type (
	privateReader interface {
		GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
	}
	privateWriter interface {
		SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
	}
)

// readFingerprints reads the fingerprints from p. Missing or unreadable ones
// (a state written by an older provider) are none: every object is checked.
func readFingerprints(ctx context.Context, p privateReader) kube.Fingerprints {
	if p == nil {
		return nil
	}
	raw, diags := p.GetKey(ctx, fingerprintsKey)
	if diags.HasError() || len(raw) == 0 {
		return nil
	}
	var fps kube.Fingerprints
	if json.Unmarshal(raw, &fps) != nil {
		return nil
	}
	return fps
}

// writeFingerprints stores fps in p; none removes the key.
func writeFingerprints(ctx context.Context, p privateWriter, fps kube.Fingerprints) diag.Diagnostics {
	if p == nil {
		return nil
	}
	if len(fps) == 0 {
		return p.SetKey(ctx, fingerprintsKey, nil)
	}
	raw, err := json.Marshal(fps)
	if err != nil {
		var diags diag.Diagnostics
		diags.AddError("Cannot save drift fingerprints", err.Error())
		return diags
	}
	return p.SetKey(ctx, fingerprintsKey, raw)
}

// ownerKey is the private-state key of the resource instance's owner ID
// (kube.NewOwnerID), which the cluster records on what the instance makes:
// on a release's storage records, on a set's objects. It stays out of plans
// and outputs; moving the state moves it along.
const ownerKey = "owner"

// readOwner reads the owner ID from p: "" for a state written before owners
// were recorded.
func readOwner(ctx context.Context, p privateReader) string {
	if p == nil {
		return ""
	}
	raw, diags := p.GetKey(ctx, ownerKey)
	if diags.HasError() || len(raw) == 0 {
		return ""
	}
	var id string
	if json.Unmarshal(raw, &id) != nil {
		return ""
	}
	return id
}

// writeOwner stores the owner ID id in p.
func writeOwner(ctx context.Context, p privateWriter, id string) diag.Diagnostics {
	if p == nil || id == "" {
		return nil
	}
	raw, _ := json.Marshal(id) // a string always encodes
	return p.SetKey(ctx, ownerKey, raw)
}

// ownerOrNew is the owner ID in p, or a new one for a state written before
// owners were recorded: the next write to the cluster records it.
func ownerOrNew(ctx context.Context, p privateReader) string {
	if id := readOwner(ctx, p); id != "" {
		return id
	}
	return kube.NewOwnerID()
}

// bookKey is the private-state key of a release's bookkeeping (releaseBook):
// what helm-controller keeps in a HelmRelease's status for its own use and a
// user does not reference, and what changes on every action. Kept out of the
// schema, it stays out of every plan: an upgrade's plan shows what the
// upgrade does, not the old history going to "known after apply".
const bookKey = "release_book"

// releaseBook is the engine's bookkeeping of a release between applies: the
// history the next action compares the release in storage with, the
// conditions, the failure counters that remediation counts retries with,
// and the last release action attempted.
type releaseBook struct {
	History                    []release.Snapshot  `json:"history,omitempty"`
	Conditions                 []release.Condition `json:"conditions,omitempty"`
	Failures                   int64               `json:"failures,omitempty"`
	InstallFailures            int64               `json:"install_failures,omitempty"`
	UpgradeFailures            int64               `json:"upgrade_failures,omitempty"`
	LastAttemptedReleaseAction string              `json:"last_attempted_release_action,omitempty"`
}

// bookOf is the bookkeeping in the engine's status s.
func bookOf(s *release.Status) *releaseBook {
	return &releaseBook{
		History: s.History, Conditions: s.Conditions,
		Failures: s.Failures, InstallFailures: s.InstallFailures, UpgradeFailures: s.UpgradeFailures,
		LastAttemptedReleaseAction: s.LastAttemptedReleaseAction,
	}
}

// failing reports whether b counts any failure: only then can a new
// configuration have counters to reset.
func (b *releaseBook) failing() bool {
	return b != nil && (b.Failures != 0 || b.InstallFailures != 0 || b.UpgradeFailures != 0)
}

// readBook reads the bookkeeping from p: nil when there is none (a state
// written by a provider that kept it in `status`, or an unreadable one).
func readBook(ctx context.Context, p privateReader) *releaseBook {
	if p == nil {
		return nil
	}
	raw, diags := p.GetKey(ctx, bookKey)
	if diags.HasError() || len(raw) == 0 {
		return nil
	}
	var b releaseBook
	if json.Unmarshal(raw, &b) != nil {
		return nil
	}
	return &b
}

// writeBook stores b in p; nil removes the key.
func writeBook(ctx context.Context, p privateWriter, b *releaseBook) diag.Diagnostics {
	if p == nil {
		return nil
	}
	if b == nil {
		return p.SetKey(ctx, bookKey, nil)
	}
	raw, err := json.Marshal(b)
	if err != nil {
		var diags diag.Diagnostics
		diags.AddError("Cannot save the release's bookkeeping", err.Error())
		return diags
	}
	return p.SetKey(ctx, bookKey, raw)
}
