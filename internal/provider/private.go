package provider

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
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
