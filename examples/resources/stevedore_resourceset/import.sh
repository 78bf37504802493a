# The objects of set "tenants" in namespace "platform", after an apply of its
# create was killed before it saved state.
terraform import stevedore_resourceset.tenants platform/tenants
