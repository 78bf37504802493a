package release

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

func TestReleaseName_composedAndShortenedTo53(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Name: "podinfo", Namespace: "default"}, "podinfo"},
		{Spec{Name: "podinfo", Namespace: "default", TargetNamespace: "apps"}, "apps-podinfo"},
		{Spec{Name: "podinfo", Namespace: "default", TargetNamespace: "apps", ReleaseName: "web"}, "web"},
		{Spec{Name: "release-name-with-very-long-name-which-is-longer-than-53-characters", Namespace: "default"},
			"release-name-with-very-long-name-which-i-788ca0d0d7b0"},
		// The composed name is shortened as a whole.
		{Spec{Name: "name-with-very-long-name-which-is-longer-than-53-characters", Namespace: "default", TargetNamespace: "release"},
			"release-name-with-very-long-name-which-i-788ca0d0d7b0"},
		// Exactly 53 is kept.
		{Spec{Name: strings.Repeat("a", 53), Namespace: "default"}, strings.Repeat("a", 53)},
	} {
		if got := ReleaseName(&tc.spec); got != tc.want {
			t.Errorf("ReleaseName(%+v) = %q, want %q", tc.spec, got, tc.want)
		}
		if n := len(ReleaseName(&tc.spec)); n > 53 {
			t.Errorf("ReleaseName(%+v) is %d long", tc.spec, n)
		}
	}
}

func TestValidateSpec_errorNamesTheField(t *testing.T) {
	base := func() *Spec { return &Spec{Name: "podinfo", Namespace: "default"} }
	if err := validateSpec(base()); err != nil {
		t.Fatalf("valid spec: %v", err)
	}
	for _, tc := range []struct {
		mutate func(*Spec)
		field  string
	}{
		{func(s *Spec) { s.ReleaseName = strings.Repeat("r", 54) }, "release_name"},
		{func(s *Spec) { s.Upgrade.Remediation.Strategy = "retry" }, "upgrade.remediation.strategy"},
		{func(s *Spec) { s.Install.CRDs = "Replace" }, "install.crds"},
		{func(s *Spec) { s.DriftDetection.Mode = "on" }, "drift_detection.mode"},
		{func(s *Spec) { s.Uninstall.DeletionPropagation = "now" }, "uninstall.deletion_propagation"},
		{func(s *Spec) { s.ValuesFrom = []ValuesReference{{Kind: "Pod", Name: "x"}} }, "values_from[0].kind"},
	} {
		s := base()
		tc.mutate(s)
		err := validateSpec(s)
		var fe *fielderr.Error
		if !errors.As(err, &fe) || fe.Path != tc.field {
			t.Errorf("want a FieldError on %s, got %v", tc.field, err)
		}
	}
}

func TestObjectError_namesTheReleaseOnce(t *testing.T) {
	spec := &Spec{Name: "podinfo", Namespace: "default"}
	err := objectError(spec, &fielderr.Error{Path: "values_from[0]", Err: errors.New("ConfigMap default/x not found")})
	if got, want := err.Error(), "helmrelease default/podinfo: values_from[0]: ConfigMap default/x not found"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var fe *fielderr.Error
	if !errors.As(err, &fe) {
		t.Error("the FieldError is not reachable through errors.As")
	}
	// An error that names the object already is not named twice.
	again := objectError(spec, objectError(spec, errors.New("drift detection: boom")))
	if strings.Count(again.Error(), "helmrelease") != 1 {
		t.Errorf("named twice: %q", again)
	}
}

// TestStorageNamespace_defaultsToNamespace: a HelmRelease in flux-system with
// its objects in apps keeps its release in flux-system, as helm-controller
// does, not in the target namespace.
func TestStorageNamespace_defaultsToNamespace(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Name: "podinfo", Namespace: "flux-system", TargetNamespace: "apps"}, "flux-system"},
		{Spec{Name: "podinfo", Namespace: "apps"}, "apps"},
		{Spec{Name: "podinfo", Namespace: "flux-system", TargetNamespace: "apps", StorageNamespace: "apps"}, "apps"},
	} {
		if got := StorageNamespace(&tc.spec); got != tc.want {
			t.Errorf("StorageNamespace of namespace %q, target %q, storage %q = %q, want %q", tc.spec.Namespace, tc.spec.TargetNamespace, tc.spec.StorageNamespace, got, tc.want)
		}
	}
}

// TestParseImportID_namesTheHelmRelease: the short form names the
// HelmRelease and the release follows Flux's rules; the extended form names
// the release and its storage; String gives the shortest equivalent form.
func TestParseImportID_namesTheHelmRelease(t *testing.T) {
	long := "name-with-very-long-name-which-is-longer-than-53-characters"
	for _, tc := range []struct {
		id                     string
		want                   ImportID
		release, storage, objs string
		short                  string
	}{
		// The Flux release of the issue: HelmRelease flux-system/podinfo with targetNamespace apps.
		{"flux-system/podinfo@apps", ImportID{Namespace: "flux-system", Name: "podinfo", TargetNamespace: "apps"},
			"apps-podinfo", "flux-system", "apps", "flux-system/podinfo@apps"},
		// `helm install -n apps podinfo`.
		{"apps/podinfo", ImportID{Namespace: "apps", Name: "podinfo"}, "podinfo", "apps", "apps", "apps/podinfo"},
		// Flux shortens a long composed name.
		{"default/" + long + "@release", ImportID{Namespace: "default", Name: long, TargetNamespace: "release"},
			"release-name-with-very-long-name-which-i-788ca0d0d7b0", "default", "release", "default/" + long + "@release"},
		// Release podinfo installed by hand in storage flux-system with its objects in apps, either way round.
		{"flux-system/podinfo@apps,release_name=podinfo",
			ImportID{Namespace: "flux-system", Name: "podinfo", TargetNamespace: "apps", ReleaseName: "podinfo"},
			"podinfo", "flux-system", "apps", "flux-system/podinfo@apps,release_name=podinfo"},
		{"apps/podinfo,storage_namespace=flux-system", ImportID{Namespace: "apps", Name: "podinfo", StorageNamespace: "flux-system"},
			"podinfo", "flux-system", "apps", "apps/podinfo,storage_namespace=flux-system"},
		{"team/web@apps,storage_namespace=helm,release_name=web.v2",
			ImportID{Namespace: "team", Name: "web", TargetNamespace: "apps", ReleaseName: "web.v2", StorageNamespace: "helm"},
			"web.v2", "helm", "apps", "team/web@apps,release_name=web.v2,storage_namespace=helm"},
		// Explicit parts equal to Flux's rules are dropped from the short form.
		{"flux-system/podinfo@apps,release_name=apps-podinfo,storage_namespace=flux-system",
			ImportID{Namespace: "flux-system", Name: "podinfo", TargetNamespace: "apps", ReleaseName: "apps-podinfo", StorageNamespace: "flux-system"},
			"apps-podinfo", "flux-system", "apps", "flux-system/podinfo@apps"},
	} {
		id, err := ParseImportID(tc.id)
		if err != nil {
			t.Errorf("ParseImportID(%q): %v", tc.id, err)
			continue
		}
		if id != tc.want {
			t.Errorf("ParseImportID(%q) = %+v, want %+v", tc.id, id, tc.want)
		}
		if r, s := id.Release(); r != tc.release || s != tc.storage {
			t.Errorf("%q: release %s in %s, want %s in %s", tc.id, r, s, tc.release, tc.storage)
		}
		if got := id.ReleaseNamespace(); got != tc.objs {
			t.Errorf("%q: objects in %s, want %s", tc.id, got, tc.objs)
		}
		if got := id.String(); got != tc.short {
			t.Errorf("%q: String() = %q, want %q", tc.id, got, tc.short)
		}
		if back, err := ParseImportID(id.String()); err != nil || back.String() != id.String() {
			t.Errorf("%q: String() does not parse back: %+v, %v", tc.id, back, err)
		}
	}
}

// TestParseImportID_invalidShowsBothForms: every malformed ID is an error
// that says what is wrong and shows both forms.
func TestParseImportID_invalidShowsBothForms(t *testing.T) {
	for _, tc := range []struct{ id, says string }{
		{"podinfo", `"podinfo" is not <namespace>/<name>`},
		{"", `"" is not <namespace>/<name>`},
		{"a/b/c", `is not <namespace>/<name>`},
		{"/podinfo", `namespace "" is not`},
		{"apps/", `name "" is not`},
		{"Apps/podinfo", `namespace "Apps" is not`},
		{"apps/podinfo@", "after @ is empty"},
		{"apps/podinfo@a@b", "is not <namespace>/<name>"},
		{"apps/podinfo,", "nothing follows the comma"},
		{"apps/podinfo,release=x", `"release=x" is not release_name=`},
		{"apps/podinfo,release_name", `"release_name" is not release_name=`},
		{"apps/podinfo,release_name=a,release_name=b", "release_name is given twice"},
		{"apps/podinfo,release_name=" + strings.Repeat("r", 54), "not a valid Helm release name"},
		{"apps/podinfo,storage_namespace=a.b", `storage namespace "a.b" is not`},
	} {
		_, err := ParseImportID(tc.id)
		if err == nil {
			t.Errorf("ParseImportID(%q) succeeded", tc.id)
			continue
		}
		msg := err.Error()
		for _, want := range []string{tc.says, "<namespace>/<name>[@<target_namespace>]", ",release_name=<release>",
			",storage_namespace=<namespace>", "flux-system/podinfo@apps,release_name=podinfo"} {
			if !strings.Contains(msg, want) {
				t.Errorf("ParseImportID(%q): %q does not say %q", tc.id, msg, want)
			}
		}
	}
}

// TestImportIDOf_namesTheResourceThatFoundTheRelease: the ID that a conflict
// advises names the resource that found the release, with the release's names
// where Flux's rules differ.
func TestImportIDOf_namesTheResourceThatFoundTheRelease(t *testing.T) {
	for _, tc := range []struct {
		spec                    Spec
		release, storage, objNS string
		want                    string
	}{
		{Spec{Namespace: "apps", Name: "podinfo"}, "podinfo", "apps", "apps", "apps/podinfo"},
		{Spec{Namespace: "flux-system", Name: "podinfo", TargetNamespace: "apps"}, "apps-podinfo", "flux-system", "apps",
			"flux-system/podinfo@apps"},
		// The resource's release_name is explicit: so is the ID's.
		{Spec{Namespace: "flux-system", Name: "podinfo", TargetNamespace: "apps", ReleaseName: "podinfo"}, "podinfo", "flux-system", "apps",
			"flux-system/podinfo@apps,release_name=podinfo"},
		{Spec{Namespace: "apps", Name: "podinfo", StorageNamespace: "helm"}, "podinfo", "helm", "apps", "apps/podinfo,storage_namespace=helm"},
		// The release's objects are elsewhere than the resource says: the ID says where.
		{Spec{Namespace: "apps", Name: "podinfo"}, "podinfo", "apps", "web", "apps/podinfo@web,release_name=podinfo"},
	} {
		if got := ImportIDOf(&tc.spec, tc.release, tc.storage, tc.objNS); got != tc.want {
			t.Errorf("ImportIDOf(%+v, %s, %s, %s) = %q, want %q", tc.spec, tc.release, tc.storage, tc.objNS, got, tc.want)
		}
	}
}

// An import of a name that is not a release of the storage namespace, where a
// release <target>-<name> is (a HelmRelease with a target namespace), lists
// the import ID that names it.
func TestImport_notFoundListsTargetCandidates(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	storage := makeNamespace(t, c)
	path, _ := podinfo(t, "1.0.0")
	if err := testenv.HelmInstall(testenv.Need(t).Cluster.Kubeconfig, storage, "apps-podinfo", path, nil); err != nil {
		t.Fatal(err)
	}
	_, err := e.Import(ctx, storage, "podinfo")
	var nf *NotFoundError
	want := ImportIDOf(&Spec{Namespace: storage, Name: "podinfo", TargetNamespace: "apps"}, "apps-podinfo", storage, storage)
	if !errors.As(err, &nf) || nf.Candidates["apps-podinfo"] != want || !strings.Contains(err.Error(), strconv.Quote(want)) {
		t.Fatalf("want a not-found error listing %q, got %v", want, err)
	}
}
