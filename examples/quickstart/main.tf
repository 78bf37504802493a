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

variable "greeting" {
  description = "podinfo's greeting. Change it and the plan shows the upgrade's change to the ConfigMap."
  type        = string
  default     = "hello from stevedore"
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

# podinfo released from that artifact, as a HelmRelease would be: installed,
# tested, remediated (rolled back) when an upgrade fails its tests. Refresh compares
# every object of the release with the cluster: scale the Deployment or edit its
# ConfigMap with kubectl and the next plan shows `drift` going to [], which one
# apply corrects without a new Helm revision. Change a value (var.greeting) and the
# plan's `changes` shows, per object, what the upgrade will change in the cluster.
resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = "default"

  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }

  values = {
    replicaCount = 2
    config = {
      greeting = var.greeting
    }
  }

  test {
    enable = true
  }

  upgrade {
    remediation {
      retries  = 2
      strategy = "rollback"
    }
  }
}

# Two tenants, each with a namespace, a service account and a web Deployment,
# rendered from one template. Remove a tenant and the plan shows its objects
# leaving the inventory; edit or delete one of them with kubectl and the next
# plan shows the drift, which apply restores.
resource "stevedore_resourceset" "tenants" {
  name      = "tenants"
  namespace = "default"

  inputs = [
    { tenant = "team-a", replicas = 1 },
    { tenant = "team-b", replicas = 2 },
  ]

  resources_template = <<-EOT
    apiVersion: v1
    kind: Namespace
    metadata:
      name: << inputs.tenant >>
    ---
    apiVersion: v1
    kind: ServiceAccount
    metadata:
      name: deployer
      namespace: << inputs.tenant >>
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
      namespace: << inputs.tenant >>
    spec:
      replicas: << inputs.replicas | int >>
      selector:
        matchLabels: {app: web}
      template:
        metadata:
          labels: {app: web}
        spec:
          serviceAccountName: deployer
          containers:
          - name: web
            image: ghcr.io/stefanprodan/podinfo:6.0.0
  EOT

  common_metadata {
    labels = { "app.kubernetes.io/managed-by" = "stevedore" }
  }

  # Apply returns once the Deployments are available (kstatus Current).
  wait = true
}

output "tenants_inventory" {
  value = [for e in stevedore_resourceset.tenants.inventory : e.id]
}

output "podinfo_release" {
  value = {
    status        = stevedore_helmrelease.podinfo.status.release_status
    revision      = stevedore_helmrelease.podinfo.version
    chart_version = stevedore_helmrelease.podinfo.chart_version
    config_digest = stevedore_helmrelease.podinfo.config_digest
  }
}

output "chart_repository" {
  value = var.chart_repository
}

output "podinfo_chart" {
  value = {
    version  = stevedore_helmchart_artifact.podinfo.chart_version
    revision = stevedore_helmchart_artifact.podinfo.revision
    digest   = stevedore_helmchart_artifact.podinfo.digest
  }
}
