package resourceset

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func objMap(t *testing.T, s string) map[string]any { return obj(t, s).Object }

// TestConfigObject: an object of a set as the cluster serves it becomes the
// `resources` entry that applies it unchanged: what the set's field manager
// applied, without what the server defaulted or keeps, what other managers
// wrote, and the set's own owner labels and adoption annotation.
func TestConfigObject(t *testing.T) {
	const managed = `"managedFields": [
		{"manager": "stevedore", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": %s},
		{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
		 "fieldsV1": {"f:metadata": {"f:annotations": {"f:other": {}}}}}]`
	with := func(fields string) string { return strings.Replace(managed, "%s", fields, 1) }
	for _, tc := range []struct {
		name, manager, live, want, err string
	}{{
		name: "service: clusterIP and defaults are the server's", manager: "stevedore",
		live: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "apps", "uid": "u", "resourceVersion": "12",
			"creationTimestamp": "2026-01-01T00:00:00Z", "generation": 1,
			"labels": {"app": "web", "stevedore.dev/resourceset-name": "s", "stevedore.dev/resourceset-namespace": "apps", "stevedore.dev/owner": "abc"},
			"annotations": {"other": "x", "stevedore.dev/adopted-by": "abc"},
			` + with(`{"f:metadata": {"f:labels": {"f:app": {}, "f:stevedore.dev/resourceset-name": {}, "f:stevedore.dev/resourceset-namespace": {}, "f:stevedore.dev/owner": {}}},
				"f:spec": {"f:selector": {}, "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:targetPort": {}}}}}`) + `},
			"spec": {"clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"], "ipFamilies": ["IPv4"], "sessionAffinity": "None", "type": "ClusterIP",
				"selector": {"app": "web"}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080, "name": ""}]},
			"status": {"loadBalancer": {}}}`,
		want: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "apps", "labels": {"app": "web"}},
			"spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}]}}`,
	}, {
		name: "deployment: containers by name, server defaults and nulls left out", manager: "stevedore",
		live: `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "apps",
			"labels": {"stevedore.dev/resourceset-name": "s", "stevedore.dev/resourceset-namespace": "apps"},
			"managedFields": [{"manager": "stevedore", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
				"fieldsV1": {"f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
					"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}, "f:args": {}}}}}}}}]},
			"spec": {"replicas": 2, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
				"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
				"selector": {"matchLabels": {"app": "web"}},
				"template": {"metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
					"spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
						"containers": [{"name": "web", "image": "nginx:1", "args": ["<<x>>"], "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log"}]}}}}`,
		want: `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "apps"},
			"spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
				"template": {"metadata": {"labels": {"app": "web"}},
					"spec": {"containers": [{"name": "web", "image": "nginx:1", "args": ["<<` + "`<<`" + `>>x>>"]}]}}}}`,
	}, {
		name: "set list (finalizers) by value, cluster-scoped", manager: "custom",
		live: `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps", "finalizers": ["a", "b"],
			"managedFields": [{"manager": "custom", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
				"fieldsV1": {"f:metadata": {"f:finalizers": {"v:\"b\"": {}}}}}]},
			"spec": {"finalizers": ["kubernetes"]}}`,
		want: `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps", "finalizers": ["b"]}}`,
	}, {
		name: "never applied by the manager: cleaned as kubectl users clean it", manager: "stevedore",
		live: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "apps", "uid": "u", "resourceVersion": "1",
			"creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"stevedore.dev/resourceset-name": "s"},
			"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
			"managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1"}]},
			"data": {"a": "1"}}`,
		want: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "apps"}, "data": {"a": "1"}}`,
	}, {
		name: "read in another version than applied", manager: "stevedore",
		live: `{"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w", "namespace": "apps",
			"managedFields": [{"manager": "stevedore", "operation": "Apply", "apiVersion": "example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": {}}]}}`,
		err: "applied it in example.com/v1",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			live := obj(t, tc.live)
			before := live.DeepCopy()
			got, err := ConfigObject(live, tc.manager)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := objMap(t, tc.want); !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Errorf("got  %s\nwant %s", g, w)
			}
			if !reflect.DeepEqual(live, before) {
				t.Error("ConfigObject changed its argument")
			}
		})
	}
}

// TestConfigObjectRenders: a `resources` entry made by ConfigObject renders
// to the object it was made from, `<<` in strings included.
func TestConfigObjectRenders(t *testing.T) {
	live := obj(t, `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "apps",
		"managedFields": [{"manager": "stevedore", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
			"fieldsV1": {"f:data": {"f:t": {}, "f:q": {}, "f:m": {}}}}]},
		"data": {"t": "<< inputs.x >> and <<<", "q": "a \"<<\" b\n'<<' c", "m": "<<"}}`)
	res, err := ConfigObject(live, "stevedore")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(&Spec{Name: "s", Namespace: "apps", Resources: []map[string]any{res}})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("%d objects", len(objs))
	}
	got, _, _ := unstructured.NestedStringMap(objs[0].Object, "data")
	want, _, _ := unstructured.NestedStringMap(live.Object, "data")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rendered %q, want %q", got, want)
	}
}
