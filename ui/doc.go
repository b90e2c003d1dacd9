// Package ui serves a read-only local web view of kagent's run histories
// and sweep dirs (kagent ui): the runs of each kernel dir, one run's rounds
// and candidates with their verdicts, timings, diffs, prompts, replies and
// plots, updated live while the run goes, and a sweep's per-problem table
// with fast_p.
//
// # Security
//
// The server binds to loopback unless told otherwise, answers GET and HEAD
// only (405 otherwise), opens every history with [store.OpenReadOnly], and
// serves files only from the artifact dirs the histories record, through
// internal/safefile (no "..", no links leaving the dir, regular files only).
// Every page is an html/template with embedded CSS and JavaScript and no
// external asset; kernel sources, LLM text and file names are escaped by
// the templates and never marked safe. Every response carries a
// Content-Security-Policy (default-src 'self'; served artifacts get
// default-src 'none' and a sandbox, so an SVG's scripts never run) and
// X-Content-Type-Options: nosniff.
//
// # Pages
//
//	/                              runs per kernel dir (and per sweep store), sweeps
//	/run/{src}/{run}               one run: baselines, plots, rounds, candidates, live events
//	/run/{src}/{run}/c/{cand}      one candidate: verdict, timing, diff against its parent,
//	                               source, prompts and replies
//	/run/{src}/{run}/events        server-sent events: the run's store event log, tailed
//	/run/{src}/{run}/file/{path}   a file of the run's artifact dir
//	/sweep/{n}                     one sweep: per-problem table and fast_p
package ui
