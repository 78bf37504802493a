# The objects of set "tenants" in namespace "platform", after an apply of its
# create was killed before it saved state.
terraform import stevedore_resourceset.tenants platform/tenants

# The flux-operator ResourceSet "tenants" in namespace "flux-system", as the set
# that takes its objects over at the next apply.
terraform import stevedore_resourceset.tenants flux-operator:flux-system/tenants
