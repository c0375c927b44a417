import crypto from 'node:crypto';
import path from 'node:path';
import { brigPaths, loadConfig } from '../../config/index.js';
import { DockerJailDriver, ownerForHome, runJailOnce, type JailArtifact } from '../../jail/index.js';
import { FsResultStore, type RunManifest } from '../../results/index.js';
import { BrigError } from '../../util/errors.js';
import { flag, numberFlag, parseArgs, writeJson, type Command } from '../command.js';

/**
 * The first `brig spawn`: one command in one fresh hardened jail, its /workspace/out
 * collected under $BRIG_HOME/results/<run>/<run>/out and indexed as ResultRefs, so
 * `brig ref list RUN` / `brig ref read REF` drill into them. No lease or broker yet: the child
 * gets no capabilities at all (it cannot reach the supervisor), so nothing needs granting.
 */
const PREVIEW_BYTES = 2048;

export function newRunId(): string {
  return `r-${Date.now().toString(36)}-${crypto.randomBytes(4).toString('hex')}`;
}

const command: Command = {
  name: 'spawn',
  summary: 'Run a command in a fresh hardened jail (no network, read-only root, no caps) and collect /workspace/out.',
  usage:
    'brig spawn [--memory MB] [--cpus N] [--pids N] [--timeout SECONDS] [--artifact PATH]... [--image TAG] [--json] -- ARGV...',
  async run(args, io) {
    const p = parseArgs(args, { valued: ['memory', 'cpus', 'pids', 'timeout', 'artifact', 'image'], booleans: ['json'] });
    const argv = [...p.positionals, ...p.rest];
    if (argv.length === 0) throw new BrigError('invalid_input', 'spawn needs a command after `--`', { hint: 'e.g. `brig spawn -- sh -c "echo hi > out/a.txt"`' });
    const cfg = loadConfig(io.env);
    const runId = newRunId();
    const artifacts: JailArtifact[] = (p.flags.get('artifact') ?? []).map((a) => ({ hostPath: path.resolve(a), name: path.basename(a) }));
    const store = new FsResultStore({ dir: brigPaths(cfg.home).results });
    const runDir = store.runDir(runId, runId);
    const driver = new DockerJailDriver({ dockerHost: cfg.dockerHost, owner: ownerForHome(cfg.home) });
    const image = flag(p, 'image');
    const res = await runJailOnce(
      driver,
      {
        runId,
        leaseId: `none-${runId}`,
        rootRunId: runId,
        argv,
        env: { HOME: '/workspace', BRIG_RUN_ID: runId },
        limits: {
          memoryMb: Math.round(numberFlag(p, 'memory') ?? 512),
          cpu: numberFlag(p, 'cpus') ?? 1,
          pids: Math.round(numberFlag(p, 'pids') ?? 128),
          tmpfsMb: 64,
        },
        artifacts,
        ...(image ? { image } : {}),
      },
      { timeoutMs: Math.round((numberFlag(p, 'timeout') ?? 600) * 1000), collectTo: path.join(runDir, 'out') },
    );
    let manifest: RunManifest | null = null;
    if (res.collected) manifest = await store.indexDir(runId, runId, res.collected.dir);
    const summary = {
      runId,
      endReason: res.endReason,
      exitCode: res.exitCode,
      oomKilled: res.oomKilled,
      resultDir: res.collected?.dir ?? null,
      files: res.collected?.files ?? [],
      outputBytes: res.collected?.totalBytes ?? 0,
      skipped: res.collected?.skipped ?? [],
      refs: (manifest?.refs ?? []).map((r) => ({ ref: r.ref, path: r.path, kind: r.kind, bytes: r.bytes, lines: r.lines })),
      stdoutBytes: res.tails.stdoutBytes,
      stdoutPreview: res.tails.stdoutTail.slice(-PREVIEW_BYTES),
      stderrPreview: res.tails.stderrTail.slice(-PREVIEW_BYTES),
      error: res.error,
      timings: res.timings,
    };
    if (p.bools.has('json')) writeJson(io, summary);
    else {
      io.stdout.write(`run ${runId} ${res.endReason} (exit ${res.exitCode ?? '-'}${res.oomKilled ? ', OOM-killed' : ''})\n`);
      if (res.collected) io.stdout.write(`output: ${res.collected.files.length} files, ${res.collected.totalBytes} bytes in ${res.collected.dir}\n`);
      for (const r of summary.refs) io.stdout.write(`ref ${r.ref}  ${r.path}  ${r.kind}, ${r.bytes} bytes, ${r.lines} lines\n`);
      for (const s of summary.skipped) io.stdout.write(`skipped: ${s.path} (${s.reason})\n`);
      if (res.error) io.stdout.write(`error: ${res.error.message} [${res.error.code}]\n`);
      if (summary.stdoutPreview) io.stdout.write(`--- stdout (last ${PREVIEW_BYTES} bytes at most)\n${summary.stdoutPreview}${summary.stdoutPreview.endsWith('\n') ? '' : '\n'}`);
      if (res.endReason !== 'completed' && summary.stderrPreview) io.stdout.write(`--- stderr\n${summary.stderrPreview}\n`);
    }
    return res.endReason === 'completed' ? 0 : 1;
  },
};
export default command;
