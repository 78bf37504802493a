package release

import (
	"errors"
	"strings"
	"testing"
)

func TestReleaseName(t *testing.T) {
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

func TestValidateSpec(t *testing.T) {
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
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("want a FieldError on %s, got %v", tc.field, err)
		}
	}
}

func TestObjectError(t *testing.T) {
	spec := &Spec{Name: "podinfo", Namespace: "default"}
	err := objectError(spec, &FieldError{Field: "values_from[0]", Err: errors.New("ConfigMap default/x not found")})
	if got, want := err.Error(), "helmrelease default/podinfo: values_from[0]: ConfigMap default/x not found"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Error("the FieldError is not reachable through errors.As")
	}
	// An error that names the object already is not named twice.
	again := objectError(spec, errors.New("helmrelease default/podinfo: drift detection: boom"))
	if strings.Count(again.Error(), "helmrelease") != 1 {
		t.Errorf("named twice: %q", again)
	}
}
