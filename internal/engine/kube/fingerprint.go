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
type Fingerprint struct {
	UID             string `json:"uid"`
	ResourceVersion string `json:"rv"`
	Desired         string `json:"desired"`
}

// Fingerprints are the Fingerprint of each object found in sync, by inventory
// ID. They are kept between a refresh and the next (the provider keeps them
// in private state), so that a plan dry-runs only the objects that were
// written since.
type Fingerprints map[string]Fingerprint

// matches says whether live is the object that fp was taken of, unchanged,
// and desired the same as then.
func (fp Fingerprint) matches(live *metav1.PartialObjectMetadata, desired string) bool {
	return live != nil && fp.Desired == desired &&
		fp.UID == string(live.GetUID()) && fp.ResourceVersion == live.GetResourceVersion()
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
