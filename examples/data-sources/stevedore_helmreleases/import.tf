# Adopt every release of the namespace apps in one apply (Terraform 1.7+,
# OpenTofu 1.7+): an import block with for_each over the listing, and one
# resource block for all of them. Each release here runs the chart podinfo
# 6.5.4 with the values in values/<release>.yaml.
data "stevedore_helmreleases" "apps" {
  namespace = "apps"
}

resource "stevedore_helmchart_artifact" "podinfo" {
  repository = "oci://ghcr.io/stefanprodan/charts"
  chart      = "podinfo"
  version    = "6.5.4"
}

import {
  for_each = data.stevedore_helmreleases.apps.releases
  to       = stevedore_helmrelease.apps[each.key]
  id       = each.value.import_id
}

resource "stevedore_helmrelease" "apps" {
  for_each = data.stevedore_helmreleases.apps.releases

  # What the import ID sets of the resource, as it is (null: unset).
  name              = each.value.resource.name
  namespace         = each.value.resource.namespace
  target_namespace  = each.value.resource.target_namespace
  release_name      = each.value.resource.release_name
  storage_namespace = each.value.resource.storage_namespace

  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
  values = yamldecode(file("values/${each.value.name}.yaml"))
}
