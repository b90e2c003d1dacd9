// Package slurm runs a kagent sweep as a Slurm array job: one array task per
// shard, each running `kagent sweep --shard i/n` against a sweep dir that every
// node sees (a shared file system), and follows the job until the shards are
// done.
//
// Submit writes a batch script and a job record under DIR/slurm/ and calls
// `sbatch --parsable --array=0-(n-1)`. Query reads the record and asks Slurm
// for each task's state, through the first source that answers:
//
//   - `sacct --json` (accounting through slurmdbd; Slurm 21.08 and later),
//   - `sacct --parsable2` (accounting without the JSON serializer),
//   - `squeue` for pending and running tasks and `scontrol show job` for
//     tasks that slurmctld still remembers (clusters without accounting),
//   - the exit-code file each task's batch script writes when kagent exits.
//
// The package talks to Slurm only through its command-line tools, run in their
// own process group with a timeout; tests point Options at fake executables.
package slurm
