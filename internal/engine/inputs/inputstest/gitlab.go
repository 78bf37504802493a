package inputstest

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// GitLab is a fake GitLab REST API (under /api/v4) serving one project.
type GitLab struct {
	server
	Repo
	project string
}

// StartGitLab starts the fake for project (group/name). With a token,
// requests must carry it in PRIVATE-TOKEN. pageSize caps the page size (0
// for 100).
func StartGitLab(project, token string, pageSize int) *GitLab {
	g := &GitLab{project: project}
	g.token, g.pageSize = token, pageSize
	if g.pageSize == 0 {
		g.pageSize = 100
	}
	g.Server = newServer(g.handle)
	return g
}

// ProjectURL is the project's address, the data source's `url`.
func (g *GitLab) ProjectURL() string { return g.URL + "/" + g.project }

func (g *GitLab) handle(w http.ResponseWriter, r *http.Request) {
	if g.token != "" && r.Header.Get("PRIVATE-TOKEN") != g.token {
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]string{"message": "401 Unauthorized"})
		return
	}
	// The client escapes the project path into one segment.
	prefix := "/api/v4/projects/" + url.PathEscape(g.project) + "/"
	what, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	if r.Method != http.MethodGet || !ok {
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]string{"message": "404 Project Not Found"})
		return
	}
	g.Lock()
	defer g.Unlock()
	q := r.URL.Query()
	items := []map[string]any{}
	switch what {
	case "merge_requests":
		var want []string
		if l := q.Get("labels"); l != "" {
			want = strings.Split(l, ",")
		}
		for _, cr := range g.ChangeRequests {
			if q.Get("state") == "opened" && cr.Closed {
				continue
			}
			if slices.ContainsFunc(want, func(l string) bool { return !slices.Contains(cr.Labels, l) }) {
				continue
			}
			labels := append([]string{}, cr.Labels...)
			items = append(items, map[string]any{
				"iid": cr.Number, "id": 1000 + cr.Number, "title": cr.Title, "sha": cr.SHA,
				"source_branch": cr.Branch, "state": map[bool]string{true: "closed", false: "opened"}[cr.Closed],
				"author": map[string]any{"username": cr.Author}, "labels": labels,
			})
		}
		// GitLab's default order: created_at descending.
		slices.Reverse(items)
	case "repository/branches", "repository/tags":
		refs := g.Branches
		if what == "repository/tags" {
			refs = g.Tags
		}
		for _, ref := range refs {
			items = append(items, map[string]any{"name": ref.Name, "commit": map[string]any{"id": ref.SHA}})
		}
	default:
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]string{"message": "404 Not Found"})
		return
	}
	body, next, per := page(&g.server, q, items)
	p, _ := strconv.Atoi(q.Get("page"))
	w.Header().Set("X-Page", strconv.Itoa(max(p, 1)))
	w.Header().Set("X-Per-Page", strconv.Itoa(per))
	w.Header().Set("X-Total", strconv.Itoa(len(items)))
	if next != 0 {
		w.Header().Set("X-Next-Page", strconv.Itoa(next))
	}
	writeJSON(w, body)
}
