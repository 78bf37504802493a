# Bring a release that `helm install` made under Terraform: the release's values
# become the configuration's, and when the artifact the configuration names is in
# the provider's cache with the release's chart name and version, the first plan
# is empty.
import {
  to = stevedore_helmrelease.podinfo
  id = "apps/podinfo" # <storage namespace>/<release name>[@<target namespace>]
}

resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = "apps"

  chart {
    path   = stevedore_helmchart_artifact.podinfo.path
    digest = stevedore_helmchart_artifact.podinfo.digest
  }

  values = {
    replicaCount = 2
  }
}
