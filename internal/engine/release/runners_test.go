package release

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	helmkube "helm.sh/helm/v4/pkg/kube"
	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	helmreleasei "helm.sh/helm/v4/pkg/release"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// What the action runners' table tests share: each runner runs its Helm
// action on Helm's memory driver with Helm's fake kube client (no cluster),
// and the test asserts what it leaves in the status and in storage.

// fxChart is the fixtures' chart (podinfo 1.0.0, as fxRelease's) with one
// ConfigMap, and a test hook when withTest.
func fxChart(withTest bool) *chart.Chart {
	ch := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "podinfo", Version: "1.0.0", AppVersion: "6.0.0"},
		Values:   map[string]any{"replicaCount": 1},
		Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  replicas: {{ .Values.replicaCount | quote }}
`)}},
	}
	if withTest {
		ch.Templates = append(ch.Templates, &common.File{Name: "templates/test.yaml", Data: []byte(`apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    helm.sh/hook: test
spec:
  containers: [{name: test, image: busybox}]
`)})
	}
	return ch
}

// failing is Helm's fake kube client with the failures f sets; with none
// it is PrintingKubeClient, which succeeds at everything, with the three-way
// merge that undoFailedReleases uses.
func failing(f *kubefake.FailingKubeClient) helmkube.Interface {
	f.PrintingKubeClient = kubefake.PrintingKubeClient{Out: io.Discard, LogOutput: io.Discard}
	return f
}

// storedDriver is Helm's memory driver as a real one behaves: it keeps
// copies, as the Secrets driver keeps encoded releases, so that what Helm
// changes in a release it read or wrote is in storage only once written; and
// its writes fail as set, as those of a storage that stopped answering.
type storedDriver struct {
	driver.Driver
	createErr, updateErr error
}

func (d *storedDriver) Create(key string, rls helmreleasei.Releaser) error {
	if d.createErr != nil {
		return d.createErr
	}
	r, err := asRelease(rls)
	if err != nil {
		return err
	}
	return d.Driver.Create(key, copyRelease(r))
}

func (d *storedDriver) Update(key string, rls helmreleasei.Releaser) error {
	if d.updateErr != nil {
		return d.updateErr
	}
	r, err := asRelease(rls)
	if err != nil {
		return err
	}
	return d.Driver.Update(key, copyRelease(r))
}

func (d *storedDriver) Get(key string) (helmreleasei.Releaser, error) {
	rls, err := d.Driver.Get(key)
	if err != nil {
		return nil, err
	}
	r, err := asRelease(rls)
	if err != nil {
		return nil, err
	}
	return copyRelease(r), nil
}

func (d *storedDriver) List(filter func(helmreleasei.Releaser) bool) ([]helmreleasei.Releaser, error) {
	return copyReleases(d.Driver.List(filter))
}

func (d *storedDriver) Query(labels map[string]string) ([]helmreleasei.Releaser, error) {
	return copyReleases(d.Driver.Query(labels))
}

func copyReleases(rs []helmreleasei.Releaser, err error) ([]helmreleasei.Releaser, error) {
	out := make([]helmreleasei.Releaser, len(rs))
	for i, r := range rs {
		rel, cerr := asRelease(r)
		if cerr != nil {
			return nil, cerr
		}
		out[i] = copyRelease(rel)
	}
	return out, err
}

// runnerCase is what a runner's table test sets up.
type runnerCase struct {
	spec   func(*Spec)
	stored []*helmrelease.Release // in storage before, oldest first
	status func(stored []*helmrelease.Release) *Status
	kube   helmkube.Interface // nil: failing with no failure
	// createErr and updateErr fail storage's writes.
	createErr, updateErr error
	values               map[string]any
	tests                bool // the chart has a test hook
}

// actionFixture is an action request for c on Helm's memory driver with the
// fixtures' chart, and the storage (without the driver's failures) to
// assert on.
func actionFixture(t *testing.T, c runnerCase) (*actionRequest, releaseStore) {
	t.Helper()
	spec := &Spec{Name: fxName, Namespace: fxNS, ChartDigest: "sha256:chart"}
	if c.spec != nil {
		c.spec(spec)
	}
	spec = spec.withDefaults()
	st := &Status{}
	if c.status != nil {
		st = c.status(c.stored)
	}
	mem := fxStorage(t, c.stored...)
	drv := &storedDriver{Driver: mem, createErr: c.createErr, updateErr: c.updateErr}
	kc := c.kube
	if kc == nil {
		kc = failing(&kubefake.FailingKubeClient{})
	}
	values := c.values
	if values == nil {
		values = map[string]any{"replicaCount": 2}
	}
	ch := fxChart(c.tests)
	req := &actionRequest{
		spec: spec, st: st, name: fxName, chart: ch, values: values,
		sess: &session{driver: drv, storageNS: fxNS, releaseNS: fxNS, maxHistory: *spec.MaxHistory, kubeClient: kc},
		desired: syncInputs{chartName: ch.Name(), chartVersion: ch.Metadata.Version, chartDigest: spec.ChartDigest,
			configDigest: DigestValues(values), prDigest: postRenderersDigest(spec.PostRenderers)},
	}
	return req, releaseStore{storage.Init(&storedDriver{Driver: mem})}
}

// runnerWant is what a runner's run leaves.
type runnerWant struct {
	err        string // substring of the error; "" for none
	conditions string // "Type=Status/Reason ...", in the status's order
	history    string // historyOf
	stored     string // storageOf
	failures   [3]int64
	lastAction string
	// more checks the status further.
	more func(t *testing.T, st *Status)
}

func (w runnerWant) check(t *testing.T, req *actionRequest, store releaseStore, err error) {
	t.Helper()
	switch {
	case w.err == "" && err != nil:
		t.Errorf("error %v, want none", err)
	case w.err != "" && (err == nil || !strings.Contains(err.Error(), w.err)):
		t.Errorf("error %v, want one with %q", err, w.err)
	}
	st := req.st
	if got := conditionsOf(st); got != w.conditions {
		t.Errorf("conditions\n got %s\nwant %s", got, w.conditions)
	}
	if got := historyOf(st); got != w.history {
		t.Errorf("history %q, want %q", got, w.history)
	}
	if got := storageOf(t, store); got != w.stored {
		t.Errorf("storage %q, want %q", got, w.stored)
	}
	if got := [3]int64{st.Failures, st.InstallFailures, st.UpgradeFailures}; got != w.failures {
		t.Errorf("failures, install failures, upgrade failures = %v, want %v", got, w.failures)
	}
	if st.LastAttemptedReleaseAction != w.lastAction {
		t.Errorf("last attempted release action %q, want %q", st.LastAttemptedReleaseAction, w.lastAction)
	}
	if w.more != nil {
		w.more(t, st)
	}
}

// withConditions returns st with the conditions c, given as
// (type, status, reason) triples.
func withConditions(st *Status, c ...string) *Status {
	for i := 0; i+2 < len(c); i += 3 {
		setCondition(st, c[i], c[i+1], c[i+2], c[i]+" before")
	}
	return st
}

func conditionsOf(st *Status) string {
	var parts []string
	for _, c := range st.Conditions {
		parts = append(parts, c.Type+"="+c.Status+"/"+c.Reason)
	}
	return strings.Join(parts, " ")
}

// storageOf is the release's revisions in storage, newest first, as historyOf
// writes the history.
func storageOf(t *testing.T, store releaseStore) string {
	t.Helper()
	hist, err := store.History(fxName)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	sortReleasesDesc(hist)
	var parts []string
	for _, r := range hist {
		parts = append(parts, r.Name+".v"+strconv.Itoa(r.Version)+":"+r.Info.Status.String())
	}
	return strings.Join(parts, " ")
}
