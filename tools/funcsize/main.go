// Command funcsize prints the sizes of the functions of Go packages: for each
// directory given, the non-test .go files' function and method declarations,
// measured in lines from `func` to the closing brace (doc comments not
// counted). It prints the count, the mean, the median, the 90th percentile
// and the longest functions.
//
//	cd tools/funcsize && go run . [-top N] [-tests] ../../internal/provider
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type fn struct {
	name  string
	pos   string
	lines int
}

func main() {
	top := flag.Int("top", 10, "how many of the longest functions to list")
	tests := flag.Bool("tests", false, "count _test.go files too")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: funcsize [-top N] [-tests] DIR...")
		os.Exit(2)
	}
	var all []fn
	for _, dir := range flag.Args() {
		fns, err := measure(dir, *tests)
		if err != nil {
			fmt.Fprintln(os.Stderr, "funcsize:", err)
			os.Exit(1)
		}
		all = append(all, fns...)
	}
	report(all, *top)
}

// measure returns the functions declared in the .go files of dir.
func measure(dir string, tests bool) ([]fn, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []fn
	for _, f := range files {
		if !tests && strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			out = append(out, fn{name: funcName(fd), pos: fmt.Sprintf("%s:%d", filepath.Base(f), start.Line), lines: end.Line - start.Line + 1})
		}
	}
	return out, nil
}

// funcName is `Recv.Name` for a method, `Name` for a function.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func report(fns []fn, top int) {
	if len(fns) == 0 {
		fmt.Println("no functions")
		return
	}
	sort.SliceStable(fns, func(i, j int) bool { return fns[i].lines > fns[j].lines })
	total := 0
	for _, f := range fns {
		total += f.lines
	}
	asc := make([]int, len(fns))
	for i, f := range fns {
		asc[len(fns)-1-i] = f.lines
	}
	fmt.Printf("functions %d, lines %d, mean %.1f, median %d, p90 %d, max %d\n",
		len(fns), total, float64(total)/float64(len(fns)), percentile(asc, 50), percentile(asc, 90), asc[len(asc)-1])
	for i := 0; i < top && i < len(fns); i++ {
		fmt.Printf("%5d  %-50s %s\n", fns[i].lines, fns[i].name, fns[i].pos)
	}
}

// percentile is the nearest-rank percentile p of sorted (ascending).
func percentile(sorted []int, p int) int {
	rank := (p*len(sorted) + 99) / 100
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
