package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
)

// protocolRecord sees every RPC that the CLIs make to the provider during an
// acceptance case, in-process, between the CLI and the framework:
//
//   - the warnings that plans returned, so that a step can assert what the
//     CLI printed (terraform-plugin-testing does not expose warnings);
//   - every apply that returned no error, checked against its planned state
//     as the CLI checks it ("Provider produced inconsistent result after
//     apply"): each value the plan knew must come back unchanged. The CLI
//     does the same, but a step that expects an error would hide it.
type protocolRecord struct {
	mu       sync.Mutex
	warnings []*tfprotov6.Diagnostic
	// errs are the error diagnostics of refreshes, plans and applies.
	errs     []*tfprotov6.Diagnostic
	applies  int
	problems []string
	schemas  map[string]tftypes.Type
	// privates are the private states that refreshes and applies returned
	// last, by resource type and `id`.
	privates map[string][]byte
}

// factories serves the provider through the record.
func (r *protocolRecord) factories() map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"stevedore": func() (tfprotov6.ProviderServer, error) {
			return &recordingServer{ProviderServer: NewServer("test")(), rec: r}, nil
		},
	}
}

// resetWarnings forgets the warnings seen so far; a step's PreConfig calls it
// so that its checks see only its own plan's.
func (r *protocolRecord) resetWarnings() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings, r.errs = nil, nil
}

// errorsSeen returns the error diagnostics of the refreshes, plans and
// applies since the last resetWarnings, each as `<attribute path>: <summary>:
// <detail>` (`-` for the resource).
func (r *protocolRecord) errorsSeen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, d := range r.errs {
		out = append(out, pathText(d.Attribute)+": "+d.Summary+": "+d.Detail)
	}
	return out
}

// pathText is p in Terraform's syntax (`resources[1]`, `verify.public_keys[0]`),
// `-` for none.
func pathText(p *tftypes.AttributePath) string {
	if p == nil || len(p.Steps()) == 0 {
		return "-"
	}
	var b strings.Builder
	for _, st := range p.Steps() {
		switch st := st.(type) {
		case tftypes.AttributeName:
			if b.Len() > 0 {
				b.WriteString(".")
			}
			b.WriteString(string(st))
		case tftypes.ElementKeyInt:
			fmt.Fprintf(&b, "[%d]", int64(st))
		case tftypes.ElementKeyString:
			fmt.Fprintf(&b, "[%q]", string(st))
		default:
			b.WriteString("[?]")
		}
	}
	return b.String()
}

// recordErrors keeps the error diagnostics of an RPC.
func (r *protocolRecord) recordErrors(diags []*tfprotov6.Diagnostic) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range diags {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			r.errs = append(r.errs, d)
		}
	}
}

// warningsMatching returns the warnings seen since the last reset whose
// summary is summary and whose detail matches detail.
func (r *protocolRecord) warningsMatching(summary string, detail *regexp.Regexp) (match []string, all []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.warnings {
		all = append(all, d.Summary+": "+d.Detail)
		if d.Summary == summary && detail.MatchString(d.Detail) {
			match = append(match, d.Detail)
		}
	}
	return match, all
}

// reset forgets everything seen, for the next CLI's run of a case.
func (r *protocolRecord) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings, r.errs, r.problems, r.applies = nil, nil, nil, 0
}

// appliesSeen is the number of applies that returned no error.
func (r *protocolRecord) appliesSeen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applies
}

// verify fails t for every apply whose result broke its plan.
func (r *protocolRecord) verify(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.problems {
		t.Error(p)
	}
}

type recordingServer struct {
	tfprotov6.ProviderServer
	rec *protocolRecord
}

func (s *recordingServer) GetProviderSchema(ctx context.Context, req *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	resp, err := s.ProviderServer.GetProviderSchema(ctx, req)
	if resp != nil {
		s.rec.mu.Lock()
		if s.rec.schemas == nil {
			s.rec.schemas = map[string]tftypes.Type{}
		}
		for name, sch := range resp.ResourceSchemas {
			s.rec.schemas[name] = sch.ValueType()
		}
		s.rec.mu.Unlock()
	}
	return resp, err
}

func (s *recordingServer) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	resp, err := s.ProviderServer.ReadResource(ctx, req)
	if resp != nil {
		s.rec.recordErrors(resp.Diagnostics)
		s.rec.recordPrivate(req.TypeName, resp.NewState, resp.Private)
	}
	return resp, err
}

// recordPrivate keeps private, the private state returned with state, as the
// latest of the resource of type typ and state's `id`.
func (r *protocolRecord) recordPrivate(typ string, state *tfprotov6.DynamicValue, private []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if state == nil || r.schemas[typ] == nil {
		return
	}
	v, err := state.Unmarshal(r.schemas[typ])
	if err != nil || v.IsNull() {
		return
	}
	var attrs map[string]tftypes.Value
	var id string
	if v.As(&attrs) != nil || attrs["id"].As(&id) != nil {
		return
	}
	if r.privates == nil {
		r.privates = map[string][]byte{}
	}
	r.privates[typ+" "+id] = private
}

// releaseBook is the bookkeeping (private state) that the latest refresh or
// apply of the release with `id` id returned.
func (r *protocolRecord) releaseBook(id string) (*releaseBook, error) {
	r.mu.Lock()
	raw, ok := r.privates["stevedore_helmrelease "+id]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no refresh or apply of release %s returned a private state", id)
	}
	var keys map[string][]byte
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, fmt.Errorf("release %s: private state: %w", id, err)
	}
	var b releaseBook
	if err := json.Unmarshal(keys[bookKey], &b); err != nil {
		return nil, fmt.Errorf("release %s: private state has no bookkeeping: %w", id, err)
	}
	return &b, nil
}

// expectBook checks the bookkeeping that the latest refresh or apply of the
// release with `id` id left in private state, for a plan check (the refresh
// before the plan) or a state check (the apply).
func expectBook(rec *protocolRecord, id string, check func(*releaseBook) error) bookCheck {
	return bookCheck{rec: rec, id: id, check: check}
}

type bookCheck struct {
	rec   *protocolRecord
	id    string
	check func(*releaseBook) error
}

func (c bookCheck) run() error {
	b, err := c.rec.releaseBook(c.id)
	if err != nil {
		return err
	}
	if err := c.check(b); err != nil {
		raw, _ := json.Marshal(b)
		return fmt.Errorf("release %s: %w; bookkeeping: %s", c.id, err, raw)
	}
	return nil
}

func (c bookCheck) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = c.run()
}

func (c bookCheck) CheckState(_ context.Context, _ statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	resp.Error = c.run()
}

func (s *recordingServer) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	resp, err := s.ProviderServer.ValidateResourceConfig(ctx, req)
	if resp != nil {
		s.rec.recordErrors(resp.Diagnostics)
	}
	return resp, err
}

func (s *recordingServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp, err := s.ProviderServer.PlanResourceChange(ctx, req)
	if resp != nil {
		s.rec.recordErrors(resp.Diagnostics)
		s.rec.mu.Lock()
		for _, d := range resp.Diagnostics {
			if d.Severity == tfprotov6.DiagnosticSeverityWarning {
				s.rec.warnings = append(s.rec.warnings, d)
			}
		}
		s.rec.mu.Unlock()
	}
	return resp, err
}

func (s *recordingServer) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	resp, err := s.ProviderServer.ApplyResourceChange(ctx, req)
	if resp != nil {
		s.rec.recordErrors(resp.Diagnostics)
	}
	if err != nil || resp == nil || hasError(resp.Diagnostics) {
		return resp, err
	}
	s.rec.recordPrivate(req.TypeName, resp.NewState, resp.Private)
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	s.rec.applies++
	if p := inconsistency(s.rec.schemas[req.TypeName], req.PlannedState, resp.NewState); p != "" {
		s.rec.problems = append(s.rec.problems, fmt.Sprintf("apply of %s returned what its plan did not promise: %s", req.TypeName, p))
	}
	return resp, err
}

// inconsistency names the attributes where the applied state differs from a
// value that the plan knew; "" when there is none. A destroy (null planned
// state) promises a null state.
func inconsistency(typ tftypes.Type, planned, applied *tfprotov6.DynamicValue) string {
	if typ == nil {
		return "no schema seen for the resource type"
	}
	if planned == nil || applied == nil {
		return ""
	}
	pv, err := planned.Unmarshal(typ)
	if err != nil {
		return "planned state: " + err.Error()
	}
	av, err := applied.Unmarshal(typ)
	if err != nil {
		return "applied state: " + err.Error()
	}
	diffs, err := pv.Diff(av)
	if err != nil {
		return err.Error()
	}
	var bad []string
	for _, d := range diffs {
		if d.Value1 == nil || !d.Value1.IsFullyKnown() {
			// Unknown at plan (or holding unknowns, whose known parts are
			// diffed on their own): anything may come back.
			continue
		}
		bad = append(bad, fmt.Sprintf("%s: planned %s, applied %v", d.Path, d.Value1, d.Value2))
	}
	return strings.Join(bad, "; ")
}

// expectWarning is a plan check: a plan since the last resetWarnings returned
// a warning with this summary whose detail matches detail.
func expectWarning(rec *protocolRecord, summary string, detail *regexp.Regexp) plancheck.PlanCheck {
	return warningCheck{rec: rec, summary: summary, detail: detail}
}

// expectNoWarning is a plan check: no plan since the last resetWarnings
// returned a warning with this summary.
func expectNoWarning(rec *protocolRecord, summary string) plancheck.PlanCheck {
	return warningCheck{rec: rec, summary: summary, absent: true}
}

type warningCheck struct {
	rec     *protocolRecord
	summary string
	detail  *regexp.Regexp
	absent  bool
}

func (c warningCheck) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	detail := c.detail
	if detail == nil {
		detail = regexp.MustCompile(``)
	}
	match, all := c.rec.warningsMatching(c.summary, detail)
	switch {
	case c.absent && len(match) > 0:
		resp.Error = fmt.Errorf("the plan warned %q: %s", c.summary, strings.Join(match, " | "))
	case !c.absent && len(match) == 0:
		resp.Error = fmt.Errorf("no plan warning %q matching %s; warnings: %q", c.summary, detail, all)
	}
}

// TestInconsistency_knownPlannedValuesComeBack: the record's check finds a
// value that the plan knew and apply changed, and accepts any value for one
// that the plan left unknown.
func TestInconsistency_knownPlannedValuesComeBack(t *testing.T) {
	typ := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"status": tftypes.String, "version": tftypes.Number}}
	value := func(status, version tftypes.Value) *tfprotov6.DynamicValue {
		dv, err := tfprotov6.NewDynamicValue(typ, tftypes.NewValue(typ, map[string]tftypes.Value{"status": status, "version": version}))
		if err != nil {
			t.Fatal(err)
		}
		return &dv
	}
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	num := func(n int64) tftypes.Value { return tftypes.NewValue(tftypes.Number, n) }
	planned := value(str("deployed"), tftypes.NewValue(tftypes.Number, tftypes.UnknownValue))
	if p := inconsistency(typ, planned, value(str("deployed"), num(2))); p != "" {
		t.Errorf("an unknown planned value filled in was reported: %s", p)
	}
	if p := inconsistency(typ, planned, value(str("failed"), num(2))); !strings.Contains(p, `"status"`) || !strings.Contains(p, "deployed") {
		t.Errorf("a known planned value that changed was not reported: %q", p)
	}
}
