package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestAccHelmRelease_timeoutNamesObjectsNotReady: an install that times out
// while Helm waits (a Deployment whose pods no node can take) fails with a
// diagnostic that names the objects not ready, with their kstatus status and
// message.
func TestAccHelmRelease_timeoutNamesObjectsNotReady(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-timeout")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		return resource.TestCase{
			Steps: []resource.TestStep{{
				Config: releaseConfig(cacheDir, chartDir, ns, `  timeout = "5s"
  values = {
    replicaCount = 2
    nodeSelector = { "stevedore.dev/no-such-node" = "true" }
  }`),
				ExpectError: regexp.MustCompile(`(?s)install\s+failed:\s+context\s+deadline\s+exceeded;\s+not\s+ready:\s+\[Deployment/` + ns +
					`/podinfo:\s+InProgress:\s+(Replicas|Updated|Available|Ready):\s+\d+/2\]`),
			}},
		}
	})
}
