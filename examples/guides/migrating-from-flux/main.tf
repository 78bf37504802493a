# The HelmRelease being migrated, as it is in Git:
#
#   apiVersion: helm.toolkit.fluxcd.io/v2
#   kind: HelmRelease
#   metadata: { name: podinfo, namespace: flux-system }
#   spec:
#     targetNamespace: apps
#     chart:
#       spec:
#         chart: podinfo
#         version: "6.5.4"
#         sourceRef: { kind: HelmRepository, name: podinfo }
#     values:
#       replicaCount: 2
#
#   apiVersion: source.toolkit.fluxcd.io/v1
#   kind: HelmRepository
#   metadata: { name: podinfo, namespace: flux-system }
#   spec: { url: "https://stefanprodan.github.io/podinfo" }

# The HelmRepository and the chart template: the version the release runs now,
# so that the import plans no upgrade. Widen it after the migration.
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = "https://stefanprodan.github.io/podinfo"
  chart      = "podinfo"
  version    = "6.5.4"
}

# The HelmRelease's spec, field by field. No release_name and no
# storage_namespace: Flux's rules give the same (release apps-podinfo, stored
# in flux-system).
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

# The HelmRelease's own names: <namespace>/<name>[@<targetNamespace>].
import {
  to = stevedore_helmrelease.podinfo
  id = "flux-system/podinfo@apps"
}
