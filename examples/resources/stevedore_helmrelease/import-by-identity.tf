# Terraform 1.12+ and OpenTofu 1.12+: an import block can name the release by
# its identity, as for a helm_release of hashicorp/helm: namespace is where
# Helm keeps the release (the resource's storage_namespace, by default its
# namespace), release_name the Helm release. The target namespace is where the
# release's objects are, and the name is the release name less
# "<target_namespace>-": release apps-podinfo, stored in flux-system with its
# objects in apps, is the HelmRelease flux-system/podinfo@apps.
import {
  to = stevedore_helmrelease.podinfo
  identity = {
    namespace    = "flux-system"
    release_name = "apps-podinfo"
  }
}

resource "stevedore_helmrelease" "podinfo" {
  name             = "podinfo"
  namespace        = "flux-system"
  target_namespace = "apps"

  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
}
