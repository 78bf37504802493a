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

output "chart_repository" {
  value = var.chart_repository
}
