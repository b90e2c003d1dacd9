package main

import (
	"io"
	"strings"
	"text/tabwriter"
)

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

func (t *table) row(cols ...string) {
	_, _ = io.WriteString(t.tw, strings.Join(cols, "\t")+"\n")
}

func (t *table) flush() error { return t.tw.Flush() }
