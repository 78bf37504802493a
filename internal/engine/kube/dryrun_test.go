package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Every write through a dry-run factory, by any client built on it and in any
// form (a DELETE with options in its body included), leaves the cluster as it
// was; a method the API server cannot dry-run is refused before it is sent.
func TestDryRun_changesNothing(t *testing.T) {
	ctx := testenv.Context(t)
	f := newFactory(t)
	c, err := f.Client()
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("dryrun-%d", time.Now().UnixNano())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"k": "live"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), cm) })

	dry, err := f.DryRun()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := dry.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps("default")
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-new"}}, metav1.CreateOptions{})
	if err != nil || created.Name != name+"-new" {
		t.Fatalf("dry-run create: %v", err)
	}
	patched, err := cms.Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"k":"patched"}}`), metav1.PatchOptions{})
	if err != nil || patched.Data["k"] != "patched" {
		t.Fatalf("dry-run patch answered %v, %v", patched.Data, err)
	}
	upd := cm.DeepCopy()
	upd.Data["k"] = "updated"
	if _, err := cms.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("dry-run update: %v", err)
	}
	policy := metav1.DeletePropagationBackground
	if err := cms.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatalf("dry-run delete with a body: %v", err)
	}
	dc, err := dry.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	if err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default").
		Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("dynamic dry-run delete: %v", err)
	}
	dcl, err := dry.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := dcl.Delete(ctx, cm.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatalf("controller-runtime dry-run delete: %v", err)
	}

	live := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), live); err != nil {
		t.Fatalf("the ConfigMap is gone after dry-run deletes: %v", err)
	}
	if live.Data["k"] != "live" || live.DeletionTimestamp != nil {
		t.Errorf("the ConfigMap changed: %v, deleting %v", live.Data, live.DeletionTimestamp)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name + "-new"}, &corev1.ConfigMap{}); err == nil {
		t.Error("the dry-run create created an object")
	}

	req, err := http.NewRequestWithContext(ctx, "TRACE", rc.Host+"/api/v1/namespaces/default/configmaps/"+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	var refused *ErrNotDryRun
	if _, err := (dryRunTransport{next: http.DefaultTransport}).RoundTrip(req); !errors.As(err, &refused) {
		t.Errorf("TRACE: %v, want ErrNotDryRun", err)
	}
}

// TestIsNoKindMatch_messages: Helm's builder flattens the RESTMapper's and
// discovery's errors into strings; each form that means "the cluster does not
// serve this kind yet" is recognized, and kustomize's unmatched patch is not.
func TestIsNoKindMatch_messages(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "crdpolicy.stevedore.dev", Version: "v1"}
	cases := []struct {
		err  error
		want bool
	}{
		{&meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "x.dev", Kind: "Widget"}}, true},
		{fmt.Errorf("unable to build kubernetes objects from release manifest: %v", &meta.NoResourceMatchError{PartialResource: gvr}), true},
		{fmt.Errorf(`unable to recognize "": %v`, &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{gvr.GroupVersion(): &meta.NoResourceMatchError{PartialResource: gvr}}}), true},
		{errors.New(`resource mapping not found for name: "a" namespace: "" from "": no matches for kind "Widget" in version "x.dev/v1"`), true},
		{errors.New(`no matches for Id ConfigMap.v1.[noGrp]/missing.[noNs]; failed to find unique target for patch`), false},
		{errors.New(`Deployment.apps "a" is invalid: spec.replicas: Invalid value`), false},
		{nil, false},
	}
	for _, c := range cases {
		if got := IsNoKindMatch(c.err); got != c.want {
			t.Errorf("IsNoKindMatch(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
