/**
 * The image contract: what brig makes of an image's own settings before a jail of it exists.
 *
 * Guarantees: nothing an image's config says weakens the hardened profile. Each setting is either
 * overridden by the profile, explicitly and visibly (USER → the pinned jail user, ENTRYPOINT/CMD →
 * the run's argv, WORKDIR → /workspace, HEALTHCHECK → none, an ENV name brig sets → brig's value),
 * or the image is refused `image_refused` before anything is made: a VOLUME other than
 * /workspace (an anonymous writable mount outside the run's capped disk), an ENV that would steer
 * brig's own runtime (the loader's LD_PRELOAD/LD_AUDIT, node's NODE_OPTIONS and kin, a BRIG_*
 * brig does not set), or an OS/architecture brig's runtime cannot run on. What the image's ENV
 * keeps is written into the create body itself, so verify compares the whole environment the
 * engine reports with what brig decided, as for the child image.
 * Threat: an image (chosen by an operator, built by anyone) whose config would add a mount,
 * a process, a user or an environment the profile does not have. Trusts: the engine's inspect of
 * the image as its config. Fails: closed — an unknown shape of config is refused, never guessed.
 *
 * Pure: takes the inspected config, returns a decision.
 */
import { BrigError, err, ok, type Result } from '../../util/errors.js';
import { WORKSPACE_DIR } from './profile.js';

/** The slice of an engine image inspect the contract reads. */
export interface ImageConfigView {
  Os?: string;
  Architecture?: string;
  Config?: {
    Env?: string[] | null;
    User?: string;
    Entrypoint?: string[] | null;
    Cmd?: string[] | null;
    WorkingDir?: string;
    Volumes?: Record<string, unknown> | null;
    Healthcheck?: { Test?: string[] | null } | null;
  } | null;
}

/** ENV names that would change how brig's own runtime (its loader, its node) runs. */
export const RUNTIME_STEERING_ENV = Object.freeze([
  'LD_PRELOAD', // the loader would load the image's code into brig's node
  'LD_AUDIT', // likewise, as an audit module
  'NODE_OPTIONS', // flags and --require/--import for brig's node
  'NODE_PATH', // module resolution of brig's runtime
  'NODE_EXTRA_CA_CERTS', // trust roots of brig's node
  'NODE_REPL_EXTERNAL_MODULE',
  'NODE_V8_COVERAGE', // writes brig's runtime's coverage into a path the image names
  'NODE_ICU_DATA',
  'NODE_TLS_REJECT_UNAUTHORIZED',
  'UV_THREADPOOL_SIZE',
  'UV_USE_IO_URING',
]);

/** PATH for an image that defines none (the usual Linux layout). */
export const DEFAULT_IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** What brig made of an image: the env it keeps and every setting the profile overrode. */
export interface ImageTerms {
  /** The image's ENV that the child gets (names brig sets are not in it). */
  env: Record<string, string>;
  /** The image's own PATH, or DEFAULT_IMAGE_PATH. */
  path: string;
  /** The image's settings the profile replaced (`user`, `entrypoint`, `cmd`, `workdir`, `healthcheck`, `env:NAME`). */
  overridden: string[];
}

export interface ContractInput {
  /** The env brig sets for the run (its names win over the image's). */
  brigEnv: Readonly<Record<string, string>>;
  /** The engine's architecture name for this host (amd64, arm64). */
  hostArch: string;
}

function refuse(message: string, data: Record<string, unknown>, hint: string): Result<never> {
  return err(new BrigError('image_refused', message, { data, hint }));
}

/** The engine's architecture name for node's. */
export function engineArch(arch: string = process.arch): string {
  return arch === 'x64' ? 'amd64' : arch;
}

export function imageTerms(image: string, view: ImageConfigView, o: ContractInput): Result<ImageTerms> {
  if ((view.Os ?? 'linux') !== 'linux' || (view.Architecture !== undefined && view.Architecture !== o.hostArch)) {
    return refuse(`the image ${image} is ${view.Os ?? '?'}/${view.Architecture ?? '?'}; brig's runtime runs on linux/${o.hostArch}`, { what: 'platform' }, `Build the image for linux/${o.hostArch}.`);
  }
  const c = view.Config ?? {};
  const volumes = Object.keys(c.Volumes ?? {}).filter((v) => v.replace(/\/+$/, '') !== WORKSPACE_DIR);
  if (volumes.length > 0) {
    return refuse(`the image ${image} declares VOLUME ${volumes.join(', ')}: an anonymous writable mount outside the run's /workspace disk`, { what: 'volume', volumes }, 'Rebuild the image without VOLUME (or with VOLUME /workspace only); write to /workspace instead.');
  }
  const env: Record<string, string> = {};
  const overridden: string[] = [];
  let imagePath: string | undefined;
  for (const entry of c.Env ?? []) {
    const eq = entry.indexOf('=');
    const name = eq < 0 ? entry : entry.slice(0, eq);
    const value = eq < 0 ? '' : entry.slice(eq + 1);
    if (RUNTIME_STEERING_ENV.includes(name) || (name.startsWith('BRIG_') && !(name in o.brigEnv))) {
      return refuse(`the image ${image} sets ENV ${name}, which would steer brig's own runtime in the jail`, { what: 'env', name }, `Rebuild the image without ENV ${name}; set it in the command the child runs instead.`);
    }
    if (name === 'PATH') imagePath = value;
    else if (name in o.brigEnv) overridden.push(`env:${name}`);
    else env[name] = value;
  }
  if (c.User) overridden.push('user');
  if (c.Entrypoint && c.Entrypoint.length > 0) overridden.push('entrypoint');
  if (c.Cmd && c.Cmd.length > 0) overridden.push('cmd');
  if (c.WorkingDir && c.WorkingDir !== WORKSPACE_DIR) overridden.push('workdir');
  const test = c.Healthcheck?.Test ?? [];
  if (test.length > 0 && test[0] !== 'NONE') overridden.push('healthcheck');
  return ok({ env, path: imagePath ?? DEFAULT_IMAGE_PATH, overridden });
}
