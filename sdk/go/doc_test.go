package baton_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every exported name of the package has a doc comment, the exported fields of exported structs
// too (a const or var inside a documented group counts as documented).
func TestEveryExportedNameHasADocComment(t *testing.T) {
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	var missing []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedReceiver(d.Recv)) {
					continue
				}
				if d.Doc == nil {
					missing = append(missing, fset.Position(d.Pos()).String()+" "+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && d.Doc == nil && s.Doc == nil {
							missing = append(missing, fset.Position(s.Pos()).String()+" "+s.Name.Name)
						}
						if st, ok := s.Type.(*ast.StructType); ok && s.Name.IsExported() {
							for _, field := range st.Fields.List {
								for _, n := range field.Names {
									if n.IsExported() && field.Doc == nil && field.Comment == nil {
										missing = append(missing, fset.Position(n.Pos()).String()+" "+s.Name.Name+"."+n.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && d.Doc == nil && s.Doc == nil && s.Comment == nil {
								missing = append(missing, fset.Position(n.Pos()).String()+" "+n.Name)
							}
						}
					}
				}
			}
		}
	}
	if len(missing) > 0 {
		t.Fatalf("exported names without a doc comment:\n%s", strings.Join(missing, "\n"))
	}
}

func exportedReceiver(recv *ast.FieldList) bool {
	typ := recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}

// The README's Go code comes from the Example functions that this suite runs: every line of
// its ```go blocks appears in example_test.go.
func TestReadmeCodeIsFromTheExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("the README has no ```go block")
	}
	for _, b := range blocks {
		for _, line := range strings.Split(string(b[1]), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || line == "..." || line == "package main" || line == "func main() {" ||
				strings.HasPrefix(line, "import") || strings.HasPrefix(line, "baton \"") {
				continue
			}
			if !strings.Contains(string(examples), line) {
				t.Errorf("README line not in example_test.go: %s", line)
			}
		}
	}
	// The quick start is the whole of Example, in order, so that it runs as copied.
	body := regexp.MustCompile(`(?s)\nfunc Example\(\) \{\n(.*?)\t// Output:`).FindSubmatch(examples)
	if body == nil {
		t.Fatal("no Example in example_test.go")
	}
	quick := strings.Split(string(blocks[0][1]), "\n")
	i := 0
	for _, line := range strings.Split(string(body[1]), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		for i < len(quick) && strings.TrimSpace(quick[i]) != line {
			i++
		}
		if i == len(quick) {
			t.Fatalf("the README's quick start lacks (or reorders) this line of Example: %s", line)
		}
	}
}
