# The release the helm CLI made:
#
#   helm repo add podinfo https://stefanprodan.github.io/podinfo
#   helm install podinfo podinfo/podinfo -n apps --version 6.5.4 -f values.yaml
#
# values.yaml is what `helm get values podinfo -n apps -o yaml` prints.
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = "https://stefanprodan.github.io/podinfo"
  chart      = "podinfo"
  version    = "6.5.4" # what `helm list -n apps` shows; widen it after the import
}

resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = "apps"

  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }

  values = yamldecode(file("${path.module}/values.yaml"))
}

# `helm install -n apps podinfo`: release podinfo, stored in apps, objects in apps.
import {
  to = stevedore_helmrelease.podinfo
  id = "apps/podinfo"
}
