package inputstest

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// GitHub is a fake GitHub Enterprise REST API (under /api/v3) serving one
// repository, owner/repo.
type GitHub struct {
	server
	Repo
	owner, repo string
}

// StartGitHub starts the fake. With a token, requests must carry it as a
// bearer token. pageSize caps the page size (0 for 100).
func StartGitHub(owner, repo, token string, pageSize int) *GitHub {
	g := &GitHub{owner: owner, repo: repo}
	g.token, g.pageSize = token, pageSize
	if g.pageSize == 0 {
		g.pageSize = 100
	}
	g.Server = newServer(g.handle)
	return g
}

// RepoURL is the repository's address, the data source's `url`.
func (g *GitHub) RepoURL() string { return g.URL + "/" + g.owner + "/" + g.repo }

func (g *GitHub) handle(w http.ResponseWriter, r *http.Request) {
	if g.token != "" && r.Header.Get("Authorization") != "Bearer "+g.token {
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]string{"message": "Bad credentials"})
		return
	}
	prefix := "/api/v3/repos/" + g.owner + "/" + g.repo + "/"
	what, ok := strings.CutPrefix(r.URL.Path, prefix)
	if r.Method != http.MethodGet || !ok {
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]string{"message": "Not Found"})
		return
	}
	g.Lock()
	defer g.Unlock()
	q := r.URL.Query()
	var body any
	var next, per int
	switch what {
	case "pulls":
		open := []map[string]any{}
		for _, cr := range g.ChangeRequests {
			if (q.Get("state") == "open") == !cr.Closed || q.Get("state") == "all" {
				labels := []map[string]any{}
				for _, l := range cr.Labels {
					labels = append(labels, map[string]any{"name": l})
				}
				open = append(open, map[string]any{
					"number": cr.Number, "title": cr.Title, "state": map[bool]string{true: "closed", false: "open"}[cr.Closed],
					"user":   map[string]any{"login": cr.Author},
					"head":   map[string]any{"ref": cr.Branch, "sha": cr.SHA},
					"labels": labels,
				})
			}
		}
		// GitHub's default order: newest first.
		slices.Reverse(open)
		body, next, per = page(&g.server, q, open)
	case "branches", "tags":
		refs := g.Branches
		if what == "tags" {
			refs = g.Tags
		}
		out := []map[string]any{}
		for _, ref := range refs {
			out = append(out, map[string]any{"name": ref.Name, "commit": map[string]any{"sha": ref.SHA}})
		}
		body, next, per = page(&g.server, q, out)
	default:
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]string{"message": "Not Found"})
		return
	}
	if next != 0 {
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?page=%d&per_page=%d>; rel="next"`, g.URL, r.URL.Path, next, per))
	}
	writeJSON(w, body)
}
