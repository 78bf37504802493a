package release

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"helm.sh/helm/v4/pkg/action"
	helmkube "helm.sh/helm/v4/pkg/kube"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/resource"
)

// undoFailedReleases prepares an upgrade that follows failed releases.
//
// Helm's upgrade patches from the last deployed release to the new manifest
// (a three-way merge with the live objects). What a failed release after that
// one changed in the cluster is in neither, so the merge leaves it: a field
// the failed release added (a nodeSelector no node matches) stays on the
// Deployment, an object only it created stays behind, and every later upgrade
// fails the same way even after the values are reverted.
//
// So before such an upgrade, each failed release since the deployed one,
// oldest first, is merged toward the new manifest the way Helm merges (Helm's
// own kube client, three-way, with the failed release as the original), for
// the objects that this release owns in the cluster; objects that only the
// failed releases had, and that this release owns, are deleted. The upgrade
// then starts from the state Helm assumes. Objects the release does not own
// (Helm refused to adopt them) are never touched. Under server-side apply
// the objects are applied, not merged, with the upgrade's mode: what the
// failed releases set under our manager and the new manifest leaves out is
// removed by the apply itself.
func undoFailedReleases(ctx context.Context, r *actionRequest, latest *helmrelease.Release, mode writeMode) error {
	if latest == nil || latest.Info == nil || latest.Info.Status != helmcommon.StatusFailed {
		return nil // the usual upgrade: nothing failed since the last deployed release
	}

	hist, err := r.sess.storage(nil).History(r.name)
	if err != nil {
		return fmt.Errorf("read release history: %w", err)
	}
	failed, deployed := failedSinceDeployed(hist)
	if len(failed) == 0 {
		return nil
	}
	// The manifest the upgrade will apply. A chart that does not render
	// fails the upgrade itself, with Helm's error: nothing to undo towards.
	cfg := r.sess.config(nil)
	up := newUpgrade(cfg, r.spec, r.sess.releaseNS, mode)
	up.DryRunStrategy = action.DryRunClient
	next, err := runRelease(up.RunWithContext(ctx, r.name, r.chart, r.values))
	if err != nil {
		return nil
	}
	kc := cfg.KubeClient
	kept, err := kc.Build(bytes.NewBufferString(deployed.Manifest), false)
	if err != nil {
		return fmt.Errorf("build the objects of %s.v%d: %w", deployed.Name, deployed.Version, err)
	}
	for _, f := range failed {
		// Built anew for each merge: Helm's Update leaves the live object
		// (with its resourceVersion) in the infos it patched.
		target, err := kc.Build(bytes.NewBufferString(next.Manifest), false)
		if err != nil {
			return fmt.Errorf("build the objects of the new manifest: %w", err)
		}
		objs, err := kc.Build(bytes.NewBufferString(f.Manifest), false)
		if err != nil {
			return fmt.Errorf("build the objects of failed release %s.v%d: %w", f.Name, f.Version, err)
		}
		owned, err := ownedInCluster(objs, r.name, r.sess.releaseNS)
		if err != nil {
			return err
		}
		// Update patches each object of original that is in target, from
		// the original to the target, and deletes those only in original.
		original := owned.Filter(func(i *resource.Info) bool { return target.Contains(i) || !kept.Contains(i) })
		patch := target.Filter(original.Contains)
		if len(original) == 0 {
			continue
		}
		// Written as the upgrade will write: under server-side apply the
		// Apply of the new manifest takes back the fields the failed
		// releases set; the objects only they had are deleted either way.
		if _, err := kc.Update(original, patch, helmkube.ClientUpdateOptionServerSideApply(mode.ServerSide, mode.ForceConflicts),
			helmkube.ClientUpdateOptionThreeWayMergeForUnstructured(!mode.ServerSide)); err != nil {
			return fmt.Errorf("failed release %s.v%d: %w", f.Name, f.Version, err)
		}
	}
	return nil
}

// failedSinceDeployed returns the failed releases newer than the newest
// deployed one, oldest first, and that deployed release; none without a
// deployed release (Helm's upgrade then merges from the last release itself).
func failedSinceDeployed(hist []*helmrelease.Release) ([]*helmrelease.Release, *helmrelease.Release) {
	var deployed *helmrelease.Release
	for _, h := range hist {
		if h.Info != nil && h.Info.Status == helmcommon.StatusDeployed && (deployed == nil || h.Version > deployed.Version) {
			deployed = h
		}
	}
	if deployed == nil {
		return nil, nil
	}
	var failed []*helmrelease.Release
	for _, h := range hist {
		if h.Version > deployed.Version && h.Info != nil && h.Info.Status == helmcommon.StatusFailed {
			failed = append(failed, h)
		}
	}
	sort.Slice(failed, func(i, j int) bool { return failed[i].Version < failed[j].Version })
	return failed, deployed
}

// ownedInCluster returns the objects of list that exist in the cluster with
// the Helm ownership annotations of release name in namespace. The infos keep
// the manifest's object: Helm's merge needs it as the original.
func ownedInCluster(list helmkube.ResourceList, name, namespace string) (helmkube.ResourceList, error) {
	var out helmkube.ResourceList
	for _, info := range list {
		live, err := resource.NewHelper(info.Client, info.Mapping).Get(info.Namespace, info.Name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("read %s %s/%s: %w", info.Mapping.GroupVersionKind.Kind, info.Namespace, info.Name, err)
		}
		a, err := meta.Accessor(live)
		if err != nil {
			continue
		}
		ann := a.GetAnnotations()
		if ann[helmReleaseNameAnnotation] == name && ann[helmReleaseNamespaceAnnotation] == namespace {
			out = append(out, info)
		}
	}
	return out, nil
}
