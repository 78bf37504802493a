# Run the release's Helm tests after every install and upgrade, and on demand:
#   terraform apply -invoke=action.stevedore_helmrelease_test.podinfo
resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = "apps"
  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }

  lifecycle {
    action_trigger {
      events  = [after_create, after_update]
      actions = [action.stevedore_helmrelease_test.podinfo]
    }
  }
}

action "stevedore_helmrelease_test" "podinfo" {
  config {
    # The release as stevedore_helmrelease names it.
    namespace         = stevedore_helmrelease.podinfo.namespace
    name              = stevedore_helmrelease.podinfo.name
    target_namespace  = stevedore_helmrelease.podinfo.target_namespace
    release_name      = stevedore_helmrelease.podinfo.release_name
    storage_namespace = stevedore_helmrelease.podinfo.storage_namespace
  }
}
