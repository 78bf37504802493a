package kube

// ListedStevedore is the owner name the listings of what is in a cluster
// (release.Engine.List, resourceset.Engine.List) give to what a stevedore
// resource made; the others are the take_over_from names (TakeOverHelm,
// TakeOverFlux, TakeOverFluxOperator), one name per tool everywhere.
const ListedStevedore = "stevedore"
