// Package indexscan reads the fields of a Helm repository index.yaml that
// chart resolution needs, without a YAML decoder, and declines what it does
// not handle (the caller then uses a decoder).
//
// Why it exists: a real repository index is large (tens of MB for the big
// public ones) and a plan reads it in every new provider process. Compare
// BenchmarkScan with BenchmarkYAMLDecode, on a generated 20 MB index:
//
//	go test -run '^$' -bench . -benchmem ./internal/engine/chart/indexscan/
//
// and the whole cold resolution with Helm's own loader,
// BenchmarkIndexCold against BenchmarkIndexColdHelm in internal/engine/chart.
// Delete this package when a YAML decoder reads such an index about as fast.
package indexscan

import (
	"bytes"
	"strings"
)

// Index and Entry are the fields of index.yaml that resolution reads; the
// tags let a YAML or JSON decoder fill the same types.
type Index struct {
	APIVersion string             `yaml:"apiVersion" json:"apiVersion"`
	Entries    map[string][]Entry `yaml:"entries" json:"entries"`
}

// Entry is one chart version of an index.
type Entry struct {
	Name       string   `yaml:"name" json:"name"`
	Version    string   `yaml:"version" json:"version"`
	AppVersion string   `yaml:"appVersion" json:"appVersion"`
	Created    string   `yaml:"created" json:"created"`
	URLs       []string `yaml:"urls" json:"urls"`
	Digest     string   `yaml:"digest" json:"digest"`
}

// Scan reads the block-style YAML that Helm (and chart-releaser,
// ChartMuseum, ...) write for index.yaml, looking only at the lines it needs:
// top-level apiVersion, and under entries each chart's list of versions with
// their name, version, appVersion, created, digest and urls. Every other line
// is skipped by indentation without being parsed, which makes it an order of
// magnitude faster than a YAML decoder on a large index.
//
// It handles the plain, single- and double-quoted (without escapes) scalars,
// block and flow sequences of URLs, comments and blank lines that such
// indexes contain. On anything else (anchors, tags, block or multi-line
// scalars in a field it reads, tabs, flow mappings, duplicate keys, several
// documents) it gives up and reports ok = false: the caller then uses a YAML
// decoder, so an unusual index costs time, never correctness. What it skips
// it does not validate: a syntax error inside a description goes unnoticed,
// where Helm would refuse the whole index.
func Scan(data []byte) (idx *Index, ok bool) {
	s := indexScanner{data: bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))}
	return s.scan()
}

type indexScanner struct {
	data []byte
	pos  int
}

// nextLine returns the next line that is not blank or a comment, its
// indentation and its content after the indentation; ok is false at the end.
// bad is set on a tab in the indentation.
func (s *indexScanner) nextLine() (indent int, content []byte, ok, bad bool) {
	for s.pos < len(s.data) {
		end := bytes.IndexByte(s.data[s.pos:], '\n')
		var line []byte
		if end < 0 {
			line = s.data[s.pos:]
			s.pos = len(s.data)
		} else {
			line = s.data[s.pos : s.pos+end]
			s.pos += end + 1
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if bytes.IndexByte(line, '\r') >= 0 {
			// A lone CR is a line break to YAML.
			return 0, nil, false, true
		}
		i := 0
		for i < len(line) && line[i] == ' ' {
			i++
		}
		if i < len(line) && line[i] == '\t' {
			return 0, nil, false, true
		}
		if i == len(line) || line[i] == '#' {
			continue
		}
		return i, line[i:], true, false
	}
	return 0, nil, false, false
}

// peekIndent returns the indentation of the next significant line, or -1.
func (s *indexScanner) peekIndent() int {
	save := s.pos
	indent, _, ok, bad := s.nextLine()
	s.pos = save
	if !ok || bad {
		return -1
	}
	return indent
}

func (s *indexScanner) scan() (*Index, bool) {
	idx := &Index{Entries: map[string][]Entry{}}
	first := true   // no key read yet
	marker := false // a leading "---" was read
	seen := map[string]bool{}
	for {
		indent, content, ok, bad := s.nextLine()
		if bad {
			return nil, false
		}
		if !ok {
			return idx, true
		}
		if first && !marker && indent == 0 && bytes.Equal(bytes.TrimRight(content, " "), []byte("---")) {
			marker = true
			continue
		}
		if first && indent != 0 {
			// An indented document: unusual, leave it to YAML.
			return nil, false
		}
		first = false
		if indent != 0 {
			// Nested under a top-level key this scanner skips.
			continue
		}
		key, value, ok := splitKey(content)
		if !ok || seen[key] {
			return nil, false
		}
		seen[key] = true
		switch key {
		case "apiVersion":
			v, ok := scalar(value)
			if !ok || s.peekIndent() > 0 {
				// Or a value continued on the next lines.
				return nil, false
			}
			idx.APIVersion = v
		case "entries":
			if len(value) != 0 {
				if v, ok := scalar(value); ok && v == "" || string(value) == "{}" {
					continue
				}
				return nil, false
			}
			if !s.scanEntries(idx) {
				return nil, false
			}
		default:
			if len(value) > 0 && !plainSafe(value) {
				// A value that may open a flow collection spanning lines,
				// an anchor, a tag: not worth the risk.
				return nil, false
			}
		}
	}
}

// scanEntries reads the charts under entries, up to the next top-level key.
func (s *indexScanner) scanEntries(idx *Index) bool {
	chartIndent := s.peekIndent()
	if chartIndent <= 0 {
		return true // empty entries
	}
	for {
		indent := s.peekIndent()
		if indent <= 0 {
			return true
		}
		if indent != chartIndent {
			return false
		}
		_, content, _, _ := s.nextLine()
		key, value, ok := splitKey(content)
		if !ok {
			return false
		}
		if _, dup := idx.Entries[key]; dup {
			return false
		}
		if len(value) > 0 {
			if string(value) != "[]" {
				return false
			}
			idx.Entries[key] = []Entry{}
			continue
		}
		list, ok := s.scanVersions(chartIndent)
		if !ok {
			return false
		}
		idx.Entries[key] = list
	}
}

// scanVersions reads the sequence of version mappings of one chart.
func (s *indexScanner) scanVersions(chartIndent int) ([]Entry, bool) {
	var list []Entry
	itemIndent := -1
	for {
		indent := s.peekIndent()
		if indent < chartIndent || indent == -1 {
			return list, true
		}
		save := s.pos
		_, content, _, _ := s.nextLine()
		if indent == chartIndent && !bytes.HasPrefix(content, []byte("- ")) && !bytes.Equal(content, []byte("-")) {
			s.pos = save // the next chart
			return list, true
		}
		if itemIndent == -1 {
			itemIndent = indent
		}
		if indent != itemIndent || !bytes.HasPrefix(content, []byte("- ")) {
			return nil, false
		}
		// "- key: value": the first field of the mapping follows the dash.
		rest := content[2:]
		extra := 0
		for extra < len(rest) && rest[extra] == ' ' {
			extra++
		}
		e, ok := s.scanEntry(itemIndent+2+extra, rest[extra:])
		if !ok {
			return nil, false
		}
		list = append(list, e)
	}
}

// scanEntry reads one version mapping whose keys are at fieldIndent; first
// is the content of its first line (after the dash).
func (s *indexScanner) scanEntry(fieldIndent int, first []byte) (Entry, bool) {
	var e Entry
	var seen uint8 // the fields read so far, to refuse duplicates
	// prev is the last key; prevEmpty whether its value was on later lines.
	var prev string
	prevEmpty := false
	urlsIndent := -1 // of an indented block sequence of URLs (yaml.v3 style)
	field := func(content []byte) bool {
		key, value, ok := splitKey(content)
		if !ok {
			return false
		}
		prev, prevEmpty = key, len(value) == 0
		if bit := readFieldBit(key); bit != 0 {
			if seen&bit != 0 {
				return false
			}
			seen |= bit
		}
		var dst *string
		switch key {
		case "name":
			dst = &e.Name
		case "version":
			dst = &e.Version
		case "appVersion":
			dst = &e.AppVersion
		case "created":
			dst = &e.Created
		case "digest":
			dst = &e.Digest
		case "urls":
			if len(value) == 0 {
				e.URLs = []string{}
				return true
			}
			urls, ok := flowSeq(value)
			e.URLs = urls
			return ok
		default:
			// Skipped: whatever it holds continues on deeper lines only.
			return true
		}
		if len(value) == 0 {
			return false // a value on the next lines: leave it to YAML
		}
		v, ok := scalar(value)
		*dst = v
		return ok
	}
	if !field(first) {
		return e, false
	}
	for {
		indent := s.peekIndent()
		if indent < fieldIndent || indent == -1 {
			return e, true
		}
		_, content, _, _ := s.nextLine()
		isItem := bytes.HasPrefix(content, []byte("- ")) || bytes.Equal(content, []byte("-"))
		switch {
		case indent == fieldIndent && isItem:
			// A block sequence at the key's indentation, as Helm writes them.
			if !prevEmpty {
				return e, false
			}
			if prev == "urls" {
				u, ok := scalar(bytes.TrimLeft(content[1:], " "))
				if !ok || u == "" {
					// An empty item: YAML's null handling decides.
					return e, false
				}
				e.URLs = append(e.URLs, u)
			}
		case indent == fieldIndent:
			if !field(content) {
				return e, false
			}
		default:
			// Deeper: the value of prev, continued.
			if prev == "urls" && prevEmpty {
				if urlsIndent == -1 {
					urlsIndent = indent
				}
				if !isItem || indent != urlsIndent {
					return e, false
				}
				u, ok := scalar(bytes.TrimLeft(content[1:], " "))
				if !ok || u == "" {
					return e, false
				}
				e.URLs = append(e.URLs, u)
				continue
			}
			switch prev {
			case "name", "version", "appVersion", "created", "digest":
				// A multi-line scalar in a field we read.
				return e, false
			}
		}
	}
}

// splitKey splits "key: value" (or "key:") into a plain or quoted key and the
// value with surrounding spaces and any comment removed.
func splitKey(content []byte) (string, []byte, bool) {
	if len(content) == 0 {
		return "", nil, false
	}
	var key string
	var rest []byte
	switch content[0] {
	case '"', '\'':
		k, n, ok := quoted(content)
		if !ok {
			return "", nil, false
		}
		key, rest = k, content[n:]
		if len(rest) == 0 || rest[0] != ':' {
			return "", nil, false
		}
		rest = rest[1:]
	default:
		if !plainSafe(content) || content[0] == '-' && (len(content) == 1 || content[1] == ' ') || content[0] == '?' {
			return "", nil, false
		}
		i := bytes.Index(content, []byte(": "))
		switch {
		case i >= 0:
			key, rest = string(content[:i]), content[i+1:]
		case content[len(content)-1] == ':':
			key, rest = string(content[:len(content)-1]), nil
		default:
			return "", nil, false
		}
		// A plain scalar ends before trailing spaces ("key :").
		key = strings.TrimRight(key, " ")
		if key == "" || strings.Contains(key, " #") {
			return "", nil, false
		}
	}
	if len(rest) > 0 && rest[0] != ' ' {
		return "", nil, false
	}
	return key, trimValue(rest), true
}

// trimValue trims spaces and a trailing comment.
func trimValue(v []byte) []byte {
	v = bytes.TrimLeft(v, " ")
	if len(v) > 0 && v[0] == '#' {
		return nil
	}
	if len(v) > 0 && v[0] != '"' && v[0] != '\'' {
		if i := bytes.Index(v, []byte(" #")); i >= 0 {
			v = v[:i]
		}
	}
	return bytes.TrimRight(v, " ")
}

// plainSafe reports whether v starts like a plain scalar: not an anchor,
// alias, tag, flow collection, block scalar, directive or reserved character.
func plainSafe(v []byte) bool {
	if len(v) == 0 {
		return true
	}
	switch v[0] {
	case '&', '*', '!', '|', '>', '{', '[', '%', '@', '`', ',', ']', '}':
		return false
	}
	return true
}

// scalar decodes a one-line scalar value as yaml.v3 decodes it into a
// string: quoted forms unquoted, null as "".
func scalar(v []byte) (string, bool) {
	if len(v) == 0 {
		return "", true
	}
	switch v[0] {
	case '"', '\'':
		s, n, ok := quoted(v)
		if !ok {
			return "", false
		}
		if rest := bytes.TrimLeft(v[n:], " "); len(rest) > 0 && rest[0] != '#' {
			return "", false
		}
		return s, true
	}
	if !plainSafe(v) || bytes.HasPrefix(v, []byte("- ")) || bytes.Contains(v, []byte(": ")) {
		return "", false
	}
	switch string(v) {
	case "~", "null", "Null", "NULL":
		return "", true
	}
	return string(v), true
}

// quoted decodes the quoted scalar at the start of v and returns it with the
// number of bytes it took. Double-quoted scalars with escapes are left to
// YAML.
func quoted(v []byte) (string, int, bool) {
	q := v[0]
	if q == '"' {
		end := bytes.IndexByte(v[1:], '"')
		if end < 0 || bytes.IndexByte(v[1:1+end], '\\') >= 0 {
			return "", 0, false
		}
		return string(v[1 : 1+end]), end + 2, true
	}
	var b []byte
	for i := 1; i < len(v); i++ {
		if v[i] != '\'' {
			b = append(b, v[i])
			continue
		}
		if i+1 < len(v) && v[i+1] == '\'' {
			b = append(b, '\'')
			i++
			continue
		}
		return string(b), i + 1, true
	}
	return "", 0, false
}

// flowSeq decodes a one-line flow sequence of scalars: [a, "b", 'c'].
func flowSeq(v []byte) ([]string, bool) {
	if len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return nil, false
	}
	inner := bytes.TrimSpace(v[1 : len(v)-1])
	out := []string{}
	if len(inner) == 0 {
		return out, true
	}
	for _, part := range bytes.Split(inner, []byte(",")) {
		part = bytes.TrimSpace(part)
		if len(part) == 0 {
			return nil, false
		}
		s, ok := scalar(part)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// readFieldBit is the bit of a field scanEntry reads, or 0.
func readFieldBit(key string) uint8 {
	switch key {
	case "name":
		return 1
	case "version":
		return 2
	case "appVersion":
		return 4
	case "created":
		return 8
	case "digest":
		return 16
	case "urls":
		return 32
	}
	return 0
}
