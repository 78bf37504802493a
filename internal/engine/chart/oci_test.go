package chart

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// TestOCIError_classifiesByStatusNotByURL: the registry's status decides,
// and the digits of a host or port in the message (127.0.0.1:40441) are no
// status. The 503 case is TestResolve_registryDownUsesCachedTags' race, which
// failed when its random port held "404".
func TestOCIError_classifiesByStatusNotByURL(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:40441/v2/podinfo/tags/list")
	status := func(code int) error {
		return fmt.Errorf("could not list: %w", &errcode.ErrorResponse{Method: http.MethodGet, URL: u, StatusCode: code})
	}
	for _, c := range []struct {
		name                   string
		err                    error
		unauthorized, notFound bool
	}{
		{"503 from a port with 404 in it", status(http.StatusServiceUnavailable), false, false},
		{"401", status(http.StatusUnauthorized), true, false},
		{"403", status(http.StatusForbidden), true, false},
		{"404", status(http.StatusNotFound), false, true},
		{"oras not found", fmt.Errorf("podinfo:9.9.9: %w", errdef.ErrNotFound), false, true},
		{"text: 503 at a port with 401 and 403", errors.New(`GET "http://127.0.0.1:40140/v2/x": response status code 503: Service Unavailable`), false, false},
		{"text: 404 status", errors.New(`GET "http://127.0.0.1:5000/v2/x": response status code 404: Not Found`), false, true},
		{"text: denied", errors.New("pull access denied"), true, false},
		{"text: connection refused at port 40441", errors.New("dial tcp 127.0.0.1:40441: connect: connection refused"), false, false},
	} {
		err := ociError(c.err)
		if got := errors.Is(err, ErrUnauthorized); got != c.unauthorized {
			t.Errorf("%s: unauthorized = %v, want %v", c.name, got, c.unauthorized)
		}
		if got := errors.Is(err, ErrNotFound); got != c.notFound {
			t.Errorf("%s: not found = %v, want %v", c.name, got, c.notFound)
		}
	}
}
