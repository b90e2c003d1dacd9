// Package prompts renders the prompts kagent sends to language models, from
// templates embedded in the binary (pongo2, a Django/Jinja-style dialect).
//
// One template per step of the loop, each with a typed data struct and a
// render method on [Set]:
//
//	diagnose  DiagnoseData  -> M distinct, ranked bottlenecks as JSON ([Diagnosis])
//	optimize  OptimizeData  -> a rewrite of the kernel along one bottleneck direction
//	refine    RefineData    -> a fix of a kernel that failed a named verification check
//	reflect   ReflectData   -> a reflexion on one attempt as JSON ([Reflection])
//	generate  GenerateData  -> a first Triton kernel for a PyTorch problem
//
// plus three building blocks every prompt carries: system (the system
// message), triton_rules (correctness rules and the banned operations, which
// match the verifier's list, [BannedOperations]) and guidance_<platform>
// (cuda, rocm, xpu, cpu).
//
// Autoescaping is off: kernel code is full of <, > and &&, and reaches the
// model byte for byte. Code is always passed as a variable, never as template
// source, so "{{" or "{%" inside a kernel is inert.
//
// # Overriding templates
//
// [New] takes a directory holding files named like the templates
// (optimize.tmpl, optimize.j2 or plain optimize) and/or a map from template
// name to file (the `templates:` key of kagent's YAML). KernelAgent's names are
// accepted as aliases (kernel_optimization, reflexion_prompt,
// triton_guidelines, kernel_generation, kernel_refinement), but a template
// must be written in pongo2's dialect for kagent's variables, listed below.
// pongo2 differs from Jinja2: use forloop.Counter (not loop.index),
// {% for %}...{% empty %} (not for...else), filter arguments after a colon
// (|join:", "), and no "is defined" tests (an undefined variable renders empty).
//
// Variables of every template: platform, gpu (name, arch, facts: a list of
// label/value), entry ("ModelNew" or "kernel_function"), problem (the
// PyTorch reference source), rules (rendered triton_rules), guidance
// (rendered platform guidance), banned (list of label/why), allow_tf32.
// diagnose adds kernel, times, roofline, metrics, num_bottlenecks,
// num_causes, num_fixes, explored, schema. optimize adds kernel, times,
// roofline, bottleneck, attempts, avoid, prioritize, target_ms,
// target_speedup, inspirations (other correct kernels shown for ideas: id,
// cell, time_ms, kernel). refine adds kernel, failure, reason, details, attempt,
// max_attempts, previous, direction. reflect adds attempt, schema. generate
// adds dtype, feedback, previous_kernel. See the embedded templates for how
// each is used.
package prompts
