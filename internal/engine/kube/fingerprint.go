package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Fingerprint is what a drift check saw of an object it found in sync: the
// live object's UID and resourceVersion, and a digest of what it was checked
// against (the desired object, the paths ignored in it, the exclusion
// selector and the field manager). Every write to an object changes its
// resourceVersion and a delete-and-recreate changes its UID, so while all
// three are the same the object is as it was when it was in sync, and its
// server-side apply dry-run would find it in sync again.
//
// Meta lets a write to the object's status alone (a controller reporting)
// keep the fingerprint, although it changes the resourceVersion: see
// metaDigest for what it covers and when it is set.
type Fingerprint struct {
	UID             string `json:"uid"`
	ResourceVersion string `json:"rv"`
	Desired         string `json:"desired"`
	Meta            string `json:"meta,omitempty"`
}

// Fingerprints are the Fingerprint of each object found in sync, by inventory
// ID. They are kept between a refresh and the next (the provider keeps them
// in private state), so that a plan dry-runs only the objects that were
// written since.
type Fingerprints map[string]Fingerprint

// fingerprintOf is the Fingerprint of live, found in sync with the desired
// state whose digest is desired.
func fingerprintOf(live metav1.Object, desired string) Fingerprint {
	fp := Fingerprint{UID: string(live.GetUID()), ResourceVersion: live.GetResourceVersion(), Desired: desired}
	m := metav1.ObjectMeta{
		Generation: live.GetGeneration(), Labels: live.GetLabels(), Annotations: live.GetAnnotations(),
		OwnerReferences: live.GetOwnerReferences(), Finalizers: live.GetFinalizers(),
		DeletionTimestamp: live.GetDeletionTimestamp(), DeletionGracePeriodSeconds: live.GetDeletionGracePeriodSeconds(),
		ManagedFields: live.GetManagedFields(),
	}
	fp.Meta = metaDigest(&m)
	return fp
}

// matches says whether live is the object that fp was taken of, unchanged
// but for its status, and desired the same as then.
func (fp Fingerprint) matches(live *metav1.PartialObjectMetadata, desired string) bool {
	if live == nil || fp.Desired != desired || fp.UID != string(live.GetUID()) {
		return false
	}
	if fp.ResourceVersion == live.GetResourceVersion() {
		return true
	}
	return fp.Meta != "" && fp.Meta == metaDigest(&live.ObjectMeta)
}

// metaDigest is the digest of what any write to an object changes, except
// a write to its status subresource: the generation, the labels, annotations,
// owner references, finalizers and deletion, and the managedFields entries of
// every manager but those of the status subresource, with their field sets
// and times. It is empty (no status-only skip) unless the object has a
// generation and an entry of the status subresource.
//
// Why that is enough: a kind with a status subresource keeps status writes
// off its main resource, and bumps metadata.generation on every write of
// what is neither metadata nor status (the API conventions; the API server
// does it for every custom resource, and the built-in kinds with a status
// subresource, Deployment for one, do it for their spec). A metadata write
// changes the metadata covered here. Any write through the main resource
// also changes the managedFields entry of its manager (its field set, or
// its time when an owned value changes), and a scale through the scale
// subresource bumps the generation. So two objects with the same UID and the
// same digest differ at most in status, which a server-side apply dry-run of
// the desired object (which has no status to apply) does not compare.
func metaDigest(m *metav1.ObjectMeta) string {
	if m.Generation == 0 {
		return ""
	}
	kept := metav1.ObjectMeta{
		Generation: m.Generation, Labels: m.Labels, Annotations: m.Annotations, OwnerReferences: m.OwnerReferences,
		Finalizers: m.Finalizers, DeletionTimestamp: m.DeletionTimestamp, DeletionGracePeriodSeconds: m.DeletionGracePeriodSeconds,
	}
	status := false
	for _, f := range m.ManagedFields {
		if f.Subresource == "status" {
			status = true
			continue
		}
		// The field set as the API server sent it (a metadata GET or LIST)
		// and as it comes out of an unstructured object may differ in
		// spacing and key order: compare the sets, not the bytes.
		if f.FieldsV1 != nil {
			var set any
			if err := json.Unmarshal(f.FieldsV1.GetRawBytes(), &set); err != nil {
				return ""
			}
			raw, err := json.Marshal(set)
			if err != nil {
				return ""
			}
			f.FieldsV1 = metav1.NewFieldsV1(string(raw))
		}
		kept.ManagedFields = append(kept.ManagedFields, f)
	}
	if !status {
		return ""
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// desiredDigest is the digest of everything a drift check of obj depends on
// besides the live object.
func desiredDigest(obj *unstructured.Unstructured, ignore jsondiff.IgnorePaths, exclusion map[string]string, fieldManager string) (string, error) {
	h := sha256.New()
	keys := make([]string, 0, len(exclusion))
	for k := range exclusion {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	pairs := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		pairs = append(pairs, k, exclusion[k])
	}
	// json.Marshal writes map keys sorted, so equal objects digest equally.
	for _, v := range []any{obj.Object, []string(ignore), pairs, fieldManager} {
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
