// Command extract copies named top-level declarations of upstream Go files, unchanged, into
// one file of package mcocommon (see README.md): the oracle runs upstream's own code.
//
// Usage: extract OUT.go FILE.go:Name,Name,... [FILE.go:Name,...]
// A name is a func, or a var/const/type spec; "ctrlcommon.X" selectors become "X"
// (hash.go lives in package render and names package common so). Imports the kept code
// does not use are dropped.
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
)

func main() {
	out := os.Args[1]
	fset := token.NewFileSet()
	var decls []ast.Decl
	imports := map[string]string{} // local name -> path
	for _, arg := range os.Args[2:] {
		parts := strings.SplitN(arg, ":", 2)
		want := map[string]bool{}
		for _, n := range strings.Split(parts[1], ",") {
			want[n] = true
		}
		f, err := parser.ParseFile(fset, parts[0], nil, parser.ParseComments)
		if err != nil {
			panic(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			segments := strings.Split(path, "/")
			name := segments[len(segments)-1]
			if len(segments) > 1 && strings.HasPrefix(name, "v") && strings.Trim(name[1:], "0123456789") == "" {
				name = segments[len(segments)-2] // "k8s.io/klog/v2" is package klog
			}
			if imp.Name != nil {
				name = imp.Name.Name
			}
			imports[name] = path
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if want[d.Name.Name] {
					delete(want, d.Name.Name)
					decls = append(decls, d)
				}
			case *ast.GenDecl:
				if d.Tok == token.IMPORT {
					continue
				}
				var keep []ast.Spec
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						if want[s.Names[0].Name] {
							delete(want, s.Names[0].Name)
							keep = append(keep, s)
						}
					case *ast.TypeSpec:
						if want[s.Name.Name] {
							delete(want, s.Name.Name)
							keep = append(keep, s)
						}
					}
				}
				if len(keep) > 0 {
					decls = append(decls, &ast.GenDecl{Tok: d.Tok, Lparen: 1, Specs: keep, Rparen: 1})
				}
			}
		}
		if len(want) > 0 {
			fmt.Fprintf(os.Stderr, "extract: not found in %s: %v\n", parts[0], want)
			os.Exit(1)
		}
	}
	used := map[string]bool{}
	for _, d := range decls {
		ast.Inspect(d, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok {
				if id.Name == "ctrlcommon" {
					id.Name = "__self__"
				} else {
					used[id.Name] = true
				}
			}
			return true
		})
	}
	var body bytes.Buffer
	for _, d := range decls {
		if err := format.Node(&body, fset, d); err != nil {
			panic(err)
		}
		body.WriteString("\n\n")
	}
	text := strings.ReplaceAll(body.String(), "__self__.", "")
	var head bytes.Buffer
	head.WriteString("// Code extracted from upstream by extract.go. DO NOT EDIT.\n\npackage mcocommon\n\nimport (\n")
	for name, path := range imports {
		if used[name] {
			fmt.Fprintf(&head, "\t%s %q\n", name, path)
		}
	}
	head.WriteString(")\n\n")
	src, err := format.Source([]byte(head.String() + text))
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		panic(err)
	}
}
