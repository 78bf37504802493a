# helm-controller's remediation: a failed install is uninstalled and retried; a
# failed upgrade, or one whose tests fail, is rolled back to the last release that
# passed its tests and retried. When retries run out the apply fails with the
# release's real status in state and a Stalled condition (RetriesExceeded); every
# plan shows a change and every apply fails the same way, until the configuration
# changes or reset_token gets a new value (Flux's reconcile.fluxcd.io/resetAt).
resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = "apps"

  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }

  timeout = "5m"

  # Set to a new value (a date, a ticket) to try again with the same configuration.
  reset_token = "2026-11-23"
  # Set to a new value to upgrade once even when nothing changed, or when out of
  # retries without resetting the counters (Flux's reconcile.fluxcd.io/forceAt).
  force_token = "2026-11-23"

  install {
    crds = "Create"
    remediation {
      retries = 3
    }
  }

  upgrade {
    crds            = "CreateReplace"
    cleanup_on_fail = true
    remediation {
      retries                = 2
      strategy               = "rollback"
      remediate_last_failure = true
    }
  }

  test {
    enable = true
    filters {
      name    = "podinfo-grpc-test"
      exclude = true
    }
  }

  uninstall {
    keep_history = false
  }
}
