package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// TestHelmReleaseUpgradeState_keepsTheReleaseStatusAndDates: a release's
// state written by tofu with the version 0 schema (status attributes at the
// top level), and the same state as version 1 had it (all of them in
// `status`), upgrade to version 2: `status` holds the Helm status and the
// dates, with their values; the bookkeeping (history, conditions, counters,
// last attempted action) is gone from the schema, for the next read to
// rebuild in private state; nothing else moved.
func TestHelmReleaseUpgradeState_keepsTheReleaseStatusAndDates(t *testing.T) {
	ctx := context.Background()
	v0, err := os.ReadFile("testdata/helmrelease_state.json")
	if err != nil {
		t.Fatal(err)
	}
	var v1state map[string]json.RawMessage
	if err := json.Unmarshal(v0, &v1state); err != nil {
		t.Fatal(err)
	}
	if err := upgradeStatusV0(v1state); err != nil {
		t.Fatal(err)
	}
	v1, err := json.Marshal(v1state)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(v1), `"history":[{`) {
		t.Fatalf("the version 1 state has no history to drop: %s", v1)
	}
	server := NewServer("test")()
	schemas, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	schema := schemas.ResourceSchemas["stevedore_helmrelease"]
	if schema.Version != 2 {
		t.Fatalf("schema version %d, want 2", schema.Version)
	}
	for version, raw := range map[int64][]byte{0: v0, 1: v1} {
		up, err := server.UpgradeResourceState(ctx, &tfprotov6.UpgradeResourceStateRequest{
			TypeName: "stevedore_helmrelease", Version: version, RawState: &tfprotov6.RawState{JSON: raw},
		})
		if err != nil || len(up.Diagnostics) > 0 {
			t.Fatalf("upgrade from version %d: %v %v", version, err, up.Diagnostics)
		}
		v, err := up.UpgradedState.Unmarshal(schema.ValueType())
		if err != nil {
			t.Fatal(err)
		}
		var attrs, status map[string]tftypes.Value
		if err := v.As(&attrs); err != nil {
			t.Fatal(err)
		}
		if err := attrs["status"].As(&status); err != nil || status == nil {
			t.Fatalf("version %d: status %v: %v", version, attrs["status"], err)
		}
		str := func(v tftypes.Value) string {
			var s string
			if err := v.As(&s); err != nil {
				t.Fatal(err)
			}
			return s
		}
		want := map[string]string{"release_status": "deployed", "first_deployed": "2026-11-23T13:44:55Z", "last_deployed": "2026-11-23T13:44:55Z"}
		// apply_method came later, without a version: null until the next
		// refresh reads it from the release.
		if len(status) != len(want)+1 || !status["apply_method"].IsNull() {
			t.Errorf("version %d: status has %d attributes, want %d and a null apply_method: %v", version, len(status), len(want)+1, status)
		}
		for name, w := range want {
			if got := str(status[name]); got != w {
				t.Errorf("version %d: status.%s = %q, want %q", version, name, got, w)
			}
		}
		if got := str(attrs["chart_version"]); got != "1.0.0" {
			t.Errorf("version %d: chart_version = %q, want 1.0.0: attributes outside status must stay", version, got)
		}
	}
}

// TestCLI_stateOfSchemaVersion1PlansNothing: a release applied by a provider
// that kept its bookkeeping in `status` (schema version 1: history,
// conditions, failure counters, last attempted action; no bookkeeping in
// private state) plans nothing with this provider, with and without
// refresh: the bookkeeping is rebuilt from Helm storage. The apply that
// follows makes no Helm revision and saves the state at version 2 with the
// bookkeeping in private state; the failure counters start over.
func TestCLI_stateOfSchemaVersion1PlansNothing(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "hr-v1-"+c.name)
		w := newWorkspace(t, c, ownedRelease(t.TempDir(), chartCopy(t, "1.0.0"), ns, "podinfo", ""))
		w.must("apply", "-auto-approve", "-input=false")
		statePath := filepath.Join(w.dir, "terraform.tfstate")
		release := func(state map[string]any) map[string]any {
			for _, r := range state["resources"].([]any) {
				r := r.(map[string]any)
				if r["type"] == "stevedore_helmrelease" {
					return r["instances"].([]any)[0].(map[string]any)
				}
			}
			t.Fatalf("no stevedore_helmrelease in the state")
			return nil
		}
		privateKeys := func(inst map[string]any) map[string][]byte {
			raw, err := base64.StdEncoding.DecodeString(inst["private"].(string))
			if err != nil {
				t.Fatal(err)
			}
			var keys map[string][]byte
			if err := json.Unmarshal(raw, &keys); err != nil {
				t.Fatal(err)
			}
			return keys
		}
		readState := func() map[string]any {
			raw, err := os.ReadFile(statePath)
			if err != nil {
				t.Fatal(err)
			}
			var state map[string]any
			if err := json.Unmarshal(raw, &state); err != nil {
				t.Fatal(err)
			}
			return state
		}

		// Rewrite the state as version 1 wrote it.
		state := readState()
		inst := release(state)
		if v := inst["schema_version"]; v != float64(2) {
			t.Fatalf("schema_version %v after apply, want 2", v)
		}
		keys := privateKeys(inst)
		var book releaseBook
		if err := json.Unmarshal(keys[bookKey], &book); err != nil || len(book.History) != 1 {
			t.Fatalf("private state after apply: bookkeeping %s (%v), want one history entry", keys[bookKey], err)
		}
		delete(keys, bookKey)
		raw, _ := json.Marshal(keys)
		inst["private"] = base64.StdEncoding.EncodeToString(raw)
		inst["schema_version"] = 1
		attrs := inst["attributes"].(map[string]any)
		status := attrs["status"].(map[string]any)
		status["history"] = []any{map[string]any{"name": "podinfo", "namespace": ns, "version": 1, "status": "deployed"}}
		status["conditions"] = []any{map[string]any{"type": "Ready", "status": "True", "reason": "InstallSucceeded", "message": "from version 1"}}
		status["failures"], status["install_failures"], status["upgrade_failures"] = 1, 1, 0
		status["last_attempted_release_action"] = "install"
		delete(status, "apply_method") // came later, without a schema version
		raw, _ = json.MarshalIndent(state, "", "  ")
		if err := os.WriteFile(statePath, raw, 0o600); err != nil {
			t.Fatal(err)
		}

		for _, args := range [][]string{{"plan", "-refresh=false"}, {"plan"}} {
			out, code := w.run(append(args, "-detailed-exitcode", "-input=false")...)
			if code != 0 {
				t.Fatalf("%s %v of the version 1 state: exit %d, want an empty plan\n%s", c.name, args, code, out)
			}
		}
		w.must("apply", "-auto-approve", "-input=false")
		if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:deployed"}) {
			t.Fatalf("revisions %v after the apply of the version 1 state, want 1:deployed alone", got)
		}
		inst = release(readState())
		if v := inst["schema_version"]; v != float64(2) {
			t.Fatalf("schema_version %v after the apply, want 2", v)
		}
		book = releaseBook{}
		if err := json.Unmarshal(privateKeys(inst)[bookKey], &book); err != nil || len(book.History) != 1 || book.History[0].Version != 1 {
			t.Fatalf("bookkeeping %+v (%v) after the apply, want the history rebuilt from storage", book, err)
		}
		if book.InstallFailures != 0 || book.Failures != 0 {
			t.Fatalf("failure counters %d/%d after the upgrade, want them started over", book.Failures, book.InstallFailures)
		}
		w.planEmpty()
		w.destroy()
	})
}
