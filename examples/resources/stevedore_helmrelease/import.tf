# Bring the release of a Flux HelmRelease under Terraform: the ID is the
# HelmRelease's own names, and its spec translates field by field. The
# release's values become the configuration's, and when the artifact the
# configuration names is in the provider's cache with the release's chart
# name and version, the first plan is empty.
#
#   apiVersion: helm.toolkit.fluxcd.io/v2
#   kind: HelmRelease
#   metadata: { name: podinfo, namespace: flux-system }
#   spec: { targetNamespace: apps, values: { replicaCount: 2 }, ... }
import {
  to = stevedore_helmrelease.podinfo
  id = "flux-system/podinfo@apps" # release apps-podinfo, stored in flux-system
}

resource "stevedore_helmrelease" "podinfo" {
  name             = "podinfo"
  namespace        = "flux-system"
  target_namespace = "apps"

  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }

  values = {
    replicaCount = 2
  }
}
