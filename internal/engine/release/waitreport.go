package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// maxNotReady is how many objects a timeout names at most.
const maxNotReady = 10

// notReadyReportTimeout bounds the reads of the report: it comes after the
// action, whose context may have run out (that may be why it failed).
const notReadyReportTimeout = 15 * time.Second

// explainTimeout adds to err, when an install or upgrade (whose writes obs
// saw) ran out of time, which objects of the release were not ready and why,
// by kstatus: `not ready: [Deployment/apps/web: InProgress: Available: 0/2]`, as
// helm-controller's wait (Helm's kstatus waiter) reports them. Helm's own
// waiter says only "context deadline exceeded". Any other err, or a timeout
// whose objects are all ready (a hook ran out of time), is returned as is.
func (r *actionRequest) explainTimeout(ctx context.Context, action string, obs *observer, err error) error {
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	written := obs.releases()
	if len(written) == 0 {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notReadyReportTimeout)
	defer cancel()
	notReady, rerr := r.notReady(ctx, written[0], waitsForJobs(r.spec, action))
	if rerr != nil || len(notReady) == 0 {
		return err
	}
	if len(notReady) > maxNotReady {
		notReady = append(notReady[:maxNotReady], fmt.Sprintf("and %d more", len(notReady)-maxNotReady))
	}
	return fmt.Errorf("%w; not ready: [%s]", err, strings.Join(notReady, ", "))
}

// waitsForJobs says whether the action waited for its Jobs to complete.
func waitsForJobs(spec *Spec, action string) bool {
	if action == actionInstall {
		return !spec.Install.DisableWaitForJobs
	}
	return !spec.Upgrade.DisableWaitForJobs
}

// notReady lists, in the order of rls's manifest, the objects of rls that
// are not Current by kstatus, each as `Kind/namespace/name: status: message`.
func (r *actionRequest) notReady(ctx context.Context, rls *helmrelease.Release, completeJobs bool) ([]string, error) {
	mapper, err := r.sess.f.RESTMapper()
	if err != nil {
		return nil, err
	}
	objs, err := driftObjects(rls, mapper)
	if err != nil {
		return nil, err
	}
	c, err := r.sess.f.Client()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
			if apierrors.IsNotFound(err) {
				out = append(out, fmt.Sprintf("%s: %s", kube.Describe(o), status.NotFoundStatus))
				continue
			}
			return nil, err
		}
		res, err := r.sess.health.Status(live, completeJobs) // kube.Status without health_check_exprs
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %s: %v", kube.Describe(o), status.UnknownStatus, err))
			continue
		}
		if res.Status == status.CurrentStatus {
			continue
		}
		line := fmt.Sprintf("%s: %s", kube.Describe(o), res.Status)
		if res.Message != "" {
			line += ": " + res.Message
		}
		out = append(out, line)
	}
	return out, nil
}
