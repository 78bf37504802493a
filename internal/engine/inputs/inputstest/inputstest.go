// Package inputstest has in-process fakes of the GitHub and GitLab REST APIs
// that serve exactly the paths the inputs package's clients call, with their
// pagination and token checks, for tests of the data source and its engine.
package inputstest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
)

// ChangeRequest is a pull or merge request.
type ChangeRequest struct {
	Number int
	Title  string
	Author string
	Branch string
	SHA    string
	Labels []string
	// Closed ones are not listed as open.
	Closed bool
}

// Ref is a branch or a tag and the commit it points at.
type Ref struct {
	Name string
	SHA  string
}

// Repo is the content of the one repository (project) a fake serves.
// Fields may change between requests under Lock.
type Repo struct {
	sync.Mutex
	ChangeRequests []ChangeRequest
	Branches       []Ref
	Tags           []Ref
}

// Set replaces the content.
func (r *Repo) Set(crs []ChangeRequest, branches, tags []Ref) {
	r.Lock()
	defer r.Unlock()
	r.ChangeRequests, r.Branches, r.Tags = crs, branches, tags
}

type server struct {
	*httptest.Server
	// Token, when set, is required.
	token string
	// pageSize caps per_page, so that tests exercise pagination.
	pageSize int
}

func (s *server) Close() { s.Server.Close() }

// page serves items[page] with per_page capped at the server's page size, and
// returns the next page number, 0 for none.
func page[T any](s *server, q url.Values, items []T) ([]T, int, int) {
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 || per > s.pageSize {
		per = s.pageSize
	}
	p, _ := strconv.Atoi(q.Get("page"))
	if p < 1 {
		p = 1
	}
	lo := min((p-1)*per, len(items))
	hi := min(lo+per, len(items))
	next := 0
	if hi < len(items) {
		next = p + 1
	}
	return items[lo:hi], next, per
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func newServer(h http.HandlerFunc) *httptest.Server { return httptest.NewServer(h) }
