# The stevedore quick start. `make demo` applies it against a local cluster that
# it starts, with the provider built from this repository.

terraform {
  required_providers {
    stevedore = {
      source = "stevedore-dev/stevedore"
    }
  }
}

variable "kubeconfig" {
  description = "Kubeconfig of the cluster to deliver to."
  type        = string
  default     = "~/.kube/config"
}

variable "chart_repository" {
  description = "Helm repository that serves the podinfo chart."
  type        = string
  default     = "https://stefanprodan.github.io/podinfo"
}

provider "stevedore" {
  kubernetes {
    config_path = var.kubeconfig
  }
}

# The highest stable podinfo chart of the repository, fetched into the provider's
# cache. Publish a newer version and the next plan shows
# chart_version "1.1.0" -> "<new>" before anything is fetched.
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = var.chart_repository
  chart      = "podinfo"
  version    = "*"
}

output "chart_repository" {
  value = var.chart_repository
}

output "podinfo_chart" {
  value = {
    version  = stevedore_helmchart_artifact.podinfo.chart_version
    revision = stevedore_helmchart_artifact.podinfo.revision
    digest   = stevedore_helmchart_artifact.podinfo.digest
    path     = stevedore_helmchart_artifact.podinfo.path
  }
}
