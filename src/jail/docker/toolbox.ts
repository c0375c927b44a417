/**
 * The toolbox image: Debian 12 with the tools real work needs, built on this machine from
 * Debian's packages — mmdebstrap from the host's configured apt sources, its tar (a temp
 * file) into the engine's image import. No registry, no Dockerfile, nothing pulled.
 *
 * Guarantees: the package list is TOOLBOX_PACKAGES, here and nowhere else; the tag carries a
 * fingerprint of the whole recipe (suite, variant, packages, apt options, hooks, the host's
 * apt sources as mmdebstrap reads them), so an unchanged recipe is never rebuilt on this
 * machine (the engine's image is the cache) and a changed one gets a new tag. The image has
 * /workspace and /workspace/out owned by the jail user (65534), runs as that user with
 * /workspace as its directory, and carries brig's labels; what a jail of it may do is the
 * jail's profile, as for any image.
 * Trusts: mmdebstrap and apt's signature checks against the host's Debian keyring.
 * Fails: mmdebstrap missing → `image_build_failed` saying how to get it; a failed build or
 * import → `image_build_failed` with the last lines of mmdebstrap's output.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import { BrigError } from '../../util/errors.js';
import { LABELS } from './labels.js';

export const TOOLBOX_IMAGE_REPO = 'brig-toolbox';
/**
 * The name a spawn or an agent spec may give for the toolbox (`--image toolbox`, frontmatter
 * `image: toolbox`): the driver resolves it to the current recipe's tag at create.
 */
export const TOOLBOX_NAME = 'toolbox';

/** What is in the toolbox, beyond Debian's required packages: the one list. */
export const TOOLBOX_PACKAGES = [
  'build-essential',
  'ca-certificates',
  'curl',
  'file',
  'git',
  'jq',
  'nodejs',
  'patch',
  'python3',
  'python3-pip',
  'python3-venv',
  'ripgrep',
  'sqlite3',
  'unzip',
] as const;

export const MMDEBSTRAP = '/usr/bin/mmdebstrap';

/** Where the host's apt sources are read from, first found (deb822, then one-line). */
const HOST_SOURCES = ['/etc/apt/sources.list.d/debian.sources', '/etc/apt/sources.list'];

export interface ToolboxRecipe {
  suite: 'bookworm';
  variant: 'apt';
  packages: readonly string[];
  aptOptions: readonly string[];
  hooks: readonly string[];
  /** The host's apt sources file (its path and content are part of the fingerprint). */
  sources: { path: string; content: string } | null;
  /** The image's environment (`ENV` lines of the import). */
  env: readonly string[];
}

/**
 * PYTHONDONTWRITEBYTECODE: an agent's edit and the next test run can fall in the same second
 * with the file's size unchanged (`-` for `+`), and Python's cache, checked by mtime seconds and
 * size, would run the old code (seen once brig's runs got fast). A jail is one run, so a cache
 * saves nothing across runs anyway.
 */
const ENV = ['PATH=/usr/local/bin:/usr/bin:/bin', 'PYTHONDONTWRITEBYTECODE=1'];

const HOOKS = [
  // The mount points and the workspace the jail user owns, like the child image's.
  'mkdir -p "$1/workspace/out" "$1/run/brig" "$1/artifacts" "$1/opt/brig" && chown -R 65534:65534 "$1/workspace"',
  // What apt keeps to install more is no use in a read-only jail.
  'rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb',
];

export function toolboxRecipe(): ToolboxRecipe {
  const src = HOST_SOURCES.find((p) => fs.existsSync(p));
  return {
    suite: 'bookworm',
    variant: 'apt',
    packages: TOOLBOX_PACKAGES,
    aptOptions: ['APT::Install-Recommends "false"'],
    hooks: HOOKS,
    sources: src ? { path: src, content: fs.readFileSync(src, 'utf8') } : null,
    env: ENV,
  };
}

export function toolboxFingerprint(r: ToolboxRecipe): string {
  return crypto.createHash('sha256').update(`brig-toolbox-v1\0${JSON.stringify(r)}`).digest('hex').slice(0, 16);
}

export function toolboxTag(r: ToolboxRecipe = toolboxRecipe()): string {
  return `${TOOLBOX_IMAGE_REPO}:${toolboxFingerprint(r)}`;
}

/** mmdebstrap's argv for the recipe, writing the root file system as a tar to stdout. */
export function mmdebstrapArgv(r: ToolboxRecipe): string[] {
  return [
    '--quiet',
    `--variant=${r.variant}`,
    `--include=${r.packages.join(',')}`,
    ...r.aptOptions.map((o) => `--aptopt=${o}`),
    ...r.hooks.map((h) => `--customize-hook=${h}`),
    '--format=tar',
    r.suite,
    '-',
    // The host's configured mirror; without one mmdebstrap's default (deb.debian.org).
    ...(r.sources ? [r.sources.path] : []),
  ];
}

export async function toolboxPresent(docker: Docker, tag = toolboxTag()): Promise<boolean> {
  try {
    await docker.getImage(tag).inspect();
    return true;
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === 404) return false;
    throw e;
  }
}

/** Builds the toolbox unless its tag is present (or `force`). */
export async function ensureToolbox(docker: Docker, opts: { force?: boolean; onProgress?: (line: string) => void } = {}): Promise<{ tag: string; built: boolean }> {
  const recipe = toolboxRecipe();
  const hash = toolboxFingerprint(recipe);
  const tag = `${TOOLBOX_IMAGE_REPO}:${hash}`;
  if (!opts.force && (await toolboxPresent(docker, tag))) return { tag, built: false };
  if (!fs.existsSync(MMDEBSTRAP)) {
    throw new BrigError('image_build_failed', `${MMDEBSTRAP} is missing: the toolbox is built from Debian's packages with mmdebstrap`, { hint: 'Install it (`apt-get install mmdebstrap`, `make deps`), then `brig image toolbox`.' });
  }
  // To a file first: mmdebstrap writes its tar only after minutes of apt, and an import
  // request idle that long was cut by the engine's connection ("socket hang up", measured).
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-toolbox-'));
  const tarFile = path.join(dir, 'rootfs.tar');
  try {
    const argv = mmdebstrapArgv(recipe).map((a) => (a === '-' ? tarFile : a));
    const child = spawn(MMDEBSTRAP, argv, { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' } });
    const lines: string[] = [];
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      for (const l of d.split('\n').filter((x) => x.trim())) {
        lines.push(l);
        if (lines.length > 20) lines.shift();
        opts.onProgress?.(l);
      }
    });
    const code = await new Promise<number>((res) => child.on('close', (c) => res(c ?? 1)));
    if (code !== 0) throw new BrigError('image_build_failed', `mmdebstrap exited ${code}: ${lines.slice(-3).join(' | ').slice(0, 600)}`);
    const changes = ['USER 65534:65534', 'WORKDIR /workspace', ...recipe.env.map((e) => `ENV ${e}`), `LABEL ${LABELS.managed}=1 ${LABELS.image}=toolbox ${LABELS.imageHash}=${hash}`];
    try {
      const stream = await docker.importImage(fs.createReadStream(tarFile) as unknown as string, { repo: TOOLBOX_IMAGE_REPO, tag: hash, changes } as never);
      await new Promise((res, rej) => docker.modem.followProgress(stream as unknown as NodeJS.ReadableStream, (e: Error | null, out: unknown) => (e ? rej(e) : res(out))));
    } catch (e) {
      throw new BrigError('image_build_failed', `importing the toolbox failed: ${(e as Error).message}`, { cause: e });
    }
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
  if (!(await toolboxPresent(docker, tag))) throw new BrigError('image_build_failed', `the engine has no ${tag} after the import`);
  return { tag, built: true };
}
