/**
 * Host repositories handed to a child and the change it made, on the host's git with its
 * configuration off: resolve and clone at spawn (repo-stage.ts), the change computed from the
 * collected files (changes.ts), `brig apply` as a new branch (apply-changes.ts).
 */
export { parseRepoSpec } from '../util/repo-spec.js';
export { resolveRepo, cloneClean, treeBytes, WORK_BRANCH, type RepoSource } from './repo-stage.js';
export { importTree, diffChanges, childCommits, childHead, MAX_COMMITS, type ChangeStat, type ChildCommit, type CollectedTree } from './changes.js';
export { applyChanges, type ApplyInput, type ApplyOutcome } from './apply-changes.js';
export { applyRun, type ApplyRunOptions } from './apply-run.js';
