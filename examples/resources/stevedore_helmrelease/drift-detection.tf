# Drift detection is on by default: refresh compares every object of the release
# with the cluster by server-side dry-run, and apply corrects what changed. Fields
# that something else owns on purpose are ignored here: replicas scaled by an
# HPA, and a webhook's CA bundle.
resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = "apps"

  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }

  drift_detection {
    mode = "enabled" # or "warn": the plan warns and changes nothing

    ignore {
      paths = ["/spec/replicas"]
      target {
        kind = "Deployment"
      }
    }
    ignore {
      paths = ["/webhooks/0/clientConfig/caBundle"]
      target {
        kind = "ValidatingWebhookConfiguration"
      }
    }
  }

  # Objects labelled or annotated helm.toolkit.fluxcd.io/driftDetection: disabled
  # are never compared.
  post_renderers {
    kustomize {
      patches {
        patch = <<-EOT
          apiVersion: apps/v1
          kind: Deployment
          metadata:
            name: podinfo
            annotations:
              helm.toolkit.fluxcd.io/driftDetection: disabled
        EOT
        target {
          kind = "Deployment"
          name = "podinfo-canary"
        }
      }
      images {
        name    = "ghcr.io/stefanprodan/podinfo"
        new_tag = "6.7.1"
      }
    }
  }
}
