// Package store keeps kagent's run history in an SQLite file: runs, rounds,
// candidates with their verdicts, timings, metrics and roofline placement,
// LLM calls and a live event log. It replaces KernelAgent's JSON "program
// database", which truncated the file before locking it, wrote non-standard
// JSON (Infinity), let a second run overwrite the first's ids and kept no
// verdicts, roofline results or failed attempts.
//
// # File
//
// One file (e.g. <kernel_dir>/.kagent/history.db) opened with [Open], in WAL
// mode with synchronous=FULL, a busy timeout and foreign keys on, through
// database/sql and the pure-Go driver modernc.org/sqlite. Each Store has one
// write connection (transactions BEGIN IMMEDIATE) and a few read-only ones,
// so it is safe for concurrent use by many goroutines, and another process
// (kagent runs show) may read, or write, while a loop runs. Every write method
// is one transaction, together with the event that logs it: a process killed
// at any instant leaves each change either wholly written or not at all.
//
// The schema is versioned: a numbered list of forward migrations, each
// applied in one transaction and recorded in schema_migrations. Open applies
// what is missing; a file of a newer version is [ErrNewerSchema] and is left
// untouched. JSON columns hold standard JSON only (non-finite numbers are
// written as 0, "not measured").
//
// # Records
//
// A run ([Store.CreateRun]) has rounds numbered from 0 without gaps, one
// open at a time ([Store.StartRound], [Store.FinishRound]). Round 0 holds
// the input kernel as the candidate Run.InputID, so every later candidate's
// parent is a recorded candidate. A candidate ([Store.AddCandidate]) enters
// as proposed, with its source and [SourceHash]; each pipeline step writes
// its result with [Store.UpdateCandidate] before the next step begins:
//
//	proposed ──verify──▶ verified ──time──▶ timed ──profile──▶ profiled
//	    │                   │                 │                   │
//	    ├─▶ rejected ◀──────┴─────────────────┴───────────────────┘  (a failing verdict)
//	    └─▶ failed   ◀──────┴─────────────────┘                      (the step could not run)
//
// No other move is allowed ([ErrTransition]): nothing is verified, timed or
// profiled twice. A repair of a rejected candidate is a new candidate with
// RefineOf set and RefineAttempt counting up. PyTorch baselines are written
// once each with [Store.SetBaseline]; the input kernel's time is its
// candidate's timing. [Store.SetBest] records the loop's promoted best.
//
// # Resume rules
//
// A loop killed at any point (kill -9 included) resumes with
// [Store.ReopenRun] and [Store.ResumeState]. What is committed is final; the
// rules are:
//
//  1. Finished rounds are complete and are not re-entered: FinishRound
//     refuses a round that still holds a proposed or verified candidate, and
//     nothing can be added to a finished round. The strategy restarts from
//     the state it stored with the last finished round (ResumeState.Rounds)
//     and the candidates' recorded results.
//  2. A round started and not finished is the open round (ResumeState.Open).
//     The loop continues it without calling StartRound: it does not propose
//     again for the slots that already have a candidate
//     (ResumeState.OpenCandidates), proposes only for the missing ones, then
//     finishes the round. StartRound's next index is ResumeState.NextRound.
//  3. A proposed candidate (source stored, no verdict) is verified again from
//     its stored source; the LLM is not asked again (ResumeState.Verify).
//  4. A verified candidate without a timing is timed (ResumeState.Time).
//  5. A candidate with a timing (timed, profiled, or rejected or failed
//     after timing) is never timed again: the store refuses it. A timed
//     candidate of the open round is profiled (ResumeState.Profile); one of a
//     finished round stays as it is (profiling was skipped).
//  6. A rejected candidate of the open round that no candidate refines yet
//     is listed in ResumeState.Unrefined; the loop refines it again if its
//     RefineAttempt is below the limit.
//  7. Profiled, rejected and failed candidates are final.
//  8. Baselines already written are not re-timed; ResumeState.MissingBaselines
//     lists those to time. The input kernel follows rules 3–5 as a candidate.
//  9. Work in flight when the process died and not yet committed is lost
//     and redone: an LLM reply whose candidate was not added yet (its call
//     is in the usage totals, which carry over to the resumed run's
//     budget), or a step whose result was not written.
//  10. A run reopened after a crash keeps its id, history and event log;
//     Run.Resumes counts the resumes. A finished run cannot be reopened.
//
// # Deduplication
//
// [NormalizeSource] strips comments, docstrings, blank lines and layout from
// Python source with a small tokenizer (a # inside a string is not a comment),
// so kernels that differ only in those hash alike; beam search keeps one of
// each [SourceHash], and [Store.CandidateByHash] finds an earlier twin.
package store

import _ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
