# The HelmRelease, as Flux names it: <namespace>/<name>[@<target_namespace>].
# The release name and storage namespace follow Flux's rules:
# release <target_namespace>-<name> (else <name>), stored in <namespace>.

# HelmRelease flux-system/podinfo with targetNamespace apps:
# release apps-podinfo, stored in flux-system, objects in apps.
terraform import stevedore_helmrelease.podinfo flux-system/podinfo@apps

# `helm install -n apps podinfo`: release podinfo, stored in apps, objects in apps.
terraform import stevedore_helmrelease.podinfo apps/podinfo

# Extended form, for a release installed under other names:
# <namespace>/<name>[@<target_namespace>][,release_name=<release>][,storage_namespace=<namespace>]
# Release podinfo installed by hand in storage flux-system with its objects in apps
# (the configuration sets release_name = "podinfo"):
terraform import stevedore_helmrelease.podinfo flux-system/podinfo@apps,release_name=podinfo
# ... or the same release as a resource in apps (the configuration sets
# storage_namespace = "flux-system"):
terraform import stevedore_helmrelease.podinfo apps/podinfo,storage_namespace=flux-system
