# Where a CLI cannot move across resource types: forget the helm_release
# (OpenTofu: a `removed` block; Terraform 1.7+: `removed` with
# `lifecycle { destroy = false }`; any CLI: `terraform state rm helm_release.web`),
# then import the release into the same stevedore_helmrelease block.
removed {
  from = helm_release.web
  lifecycle {
    destroy = false
  }
}

import {
  to = stevedore_helmrelease.web
  id = "apps/web"
}
