# A CRD and its custom resources in one set: the CRD is applied and established
# first, then the custom resources, so the kind need not exist at plan time.
resource "stevedore_resourceset" "flux_apps" {
  name      = "flux-apps"
  namespace = "flux-system"

  inputs = [
    { tenant = "team1", semver = "6.7.x" },
    { tenant = "team2", semver = "6.6.x" },
  ]

  resources = [
    {
      apiVersion = "source.toolkit.fluxcd.io/v1"
      kind       = "OCIRepository"
      metadata   = { name = "podinfo-<< inputs.tenant >>" }
      spec = {
        interval = "10m"
        url      = "oci://ghcr.io/stefanprodan/charts/podinfo"
        ref      = { semver = "<< inputs.semver >>" }
      }
    },
    {
      apiVersion = "helm.toolkit.fluxcd.io/v2"
      kind       = "HelmRelease"
      metadata   = { name = "podinfo-<< inputs.tenant >>" }
      spec = {
        interval = "1h"
        chartRef = { kind = "OCIRepository", name = "podinfo-<< inputs.tenant >>" }
      }
    },
  ]

  # The Flux CRDs, from a file next to this configuration, for example the
  # CustomResourceDefinitions of `flux install --export`.
  resources_template = file("${path.module}/flux-crds.yaml")
}
