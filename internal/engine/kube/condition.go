package kube

// Condition is a kstatus-style condition, as the engines report the state of
// what they manage: Ready for a resource set; Ready, Released, TestSuccess and
// Remediated for a Helm release. One type, so that the provider converts it
// to Terraform values in one place.
type Condition struct {
	Type    string
	Status  string // True, False, Unknown
	Reason  string
	Message string
}
