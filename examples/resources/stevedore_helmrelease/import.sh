# <storage namespace>/<release name>, or <storage namespace>/<release name>@<target namespace>
terraform import stevedore_helmrelease.podinfo apps/podinfo
