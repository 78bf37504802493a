package inputs

import (
	"hash/adler32"
	"strconv"
)

// ID is flux-operator's input id: the Adler-32 checksum of s in decimal. The
// branch and tag types take it of the branch or tag name, the OCI type of the
// tag, the Static type of the provider's UID; change requests use their
// number instead.
func ID(s string) string {
	return strconv.FormatUint(uint64(adler32.Checksum([]byte(s))), 10)
}
