/**
 * The test cluster's storage provisioner (issue 33, item 6): a volume of StorageClass
 * `brig-loop` is an ext4 image of exactly the claim's size on a loop device, so a pod's
 * `/workspace` fails a write with ENOSPC at the lease's size — the kubelet evicts at an
 * emptyDir's `sizeLimit` instead, losing the outputs. Started and ended by scripts/k8s-up.sh;
 * one node, so a volume is a `local` PersistentVolume pinned to it.
 *
 *   node --import tsx scripts/k8s-loop-provisioner.ts --server URL --ca F --cert F --key F --dir D --node N
 *
 * The loop: a claim of class `brig-loop`, pending and unbound → an image `<dir>/<pv>.img`
 * (sparse, `mkfs.ext4` with its root owned by 65534, no journal — as brig's Docker workspace
 * disks), mounted nosuid,nodev at `<dir>/<pv>`, and a PersistentVolume bound to that claim
 * (claimRef with its uid). A volume of ours that is Released or Failed (its claim went with its
 * pod) → unmounted, its image removed, the PersistentVolume deleted. Events come from two
 * watches (claims, volumes) and every 5 s a full pass, so a lost event costs seconds, not a leak.
 *
 * Guarantees: it touches only volumes it annotated (`pv.kubernetes.io/provisioned-by:
 * brig.dev/loop`) and paths under its directory; every command is run by path with argv (no
 * shell). Trusts: the API server (admin credentials of the test cluster), e2fsprogs, util-linux.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const PROVISIONER = 'brig.dev/loop';
const CLASS = 'brig-loop';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

function args(): Record<string, string> {
  const out: Record<string, string> = {};
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) out[a[i]!.replace(/^--/, '')] = a[i + 1] ?? '';
  for (const k of ['server', 'ca', 'cert', 'key', 'dir', 'node']) if (!out[k]) throw new Error(`--${k} is required`);
  return out;
}

const opt = args();
const agent = new https.Agent({ ca: fs.readFileSync(opt.ca!), cert: fs.readFileSync(opt.cert!), key: fs.readFileSync(opt.key!), keepAlive: true });
const log = (msg: string) => process.stdout.write(`${new Date().toISOString()} ${msg}\n`);

function api(method: string, p: string, body?: unknown): Promise<{ status: number; json: Obj }> {
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(p, opt.server), { method, agent, headers: { 'content-type': 'application/json', accept: 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: Obj = {};
        try {
          json = obj(JSON.parse(text));
        } catch {
          json = { text };
        }
        resolve({ status: res.statusCode ?? 0, json });
      });
    });
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${p}: no answer in 30 s`)));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** A Kubernetes quantity in bytes (the suffixes a claim's request uses). */
function bytesOf(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(q.trim());
  if (!m) throw new Error(`not a storage quantity: ${q}`);
  const unit = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2] ?? ''] ?? 1;
  return Math.ceil(Number(m[1]) * unit);
}

async function provision(pvc: Obj): Promise<void> {
  const md = obj(pvc.metadata);
  const name = `pvc-${String(md.uid)}`;
  const req = String(obj(obj(obj(pvc.spec).resources).requests).storage ?? '');
  const bytes = bytesOf(req);
  const img = path.join(opt.dir!, `${name}.img`);
  const mnt = path.join(opt.dir!, name);
  const t0 = Date.now();
  if (!isMounted(mnt)) {
    fs.mkdirSync(mnt, { recursive: true });
    fs.rmSync(img, { force: true });
    fs.writeFileSync(img, '');
    fs.truncateSync(img, bytes);
    await run('/usr/sbin/mkfs.ext4', ['-q', '-F', '-m', '0', '-I', '256', '-O', '^has_journal', '-E', 'root_owner=65534:65534,lazy_itable_init=1', '-L', 'brig-ws', img]);
    await run('/usr/bin/mount', ['-o', 'loop,nosuid,nodev', img, mnt]);
    // mkfs's lost+found is not the child's: its workspace starts empty, as on Docker.
    fs.rmSync(path.join(mnt, 'lost+found'), { recursive: true, force: true });
  }
  const pv = {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, annotations: { 'pv.kubernetes.io/provisioned-by': PROVISIONER }, labels: { 'app.kubernetes.io/managed-by': 'brig-k8s-up' } },
    spec: {
      capacity: { storage: req },
      accessModes: obj(pvc.spec).accessModes ?? ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: CLASS,
      volumeMode: 'Filesystem',
      claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: md.namespace, name: md.name, uid: md.uid, resourceVersion: md.resourceVersion },
      local: { path: mnt, fsType: 'ext4' },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [opt.node] }] }] } },
    },
  };
  const r = await api('POST', '/api/v1/persistentvolumes', pv);
  if (r.status !== 201 && r.status !== 409) throw new Error(`create ${name}: ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
  log(`provisioned ${name} (${req}) for ${String(md.namespace)}/${String(md.name)} in ${Date.now() - t0} ms`);
}

function isMounted(p: string): boolean {
  return fs.readFileSync('/proc/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === p);
}

async function release(pv: Obj): Promise<void> {
  const name = String(obj(pv.metadata).name);
  const mnt = path.join(opt.dir!, name);
  if (obj(obj(pv.spec).local).path !== mnt) throw new Error(`${name}: its path is not under ${opt.dir}: left alone`);
  if (isMounted(mnt)) await run('/usr/bin/umount', [mnt]);
  fs.rmSync(path.join(opt.dir!, `${name}.img`), { force: true });
  fs.rmSync(mnt, { recursive: true, force: true });
  const r = await api('DELETE', `/api/v1/persistentvolumes/${encodeURIComponent(name)}`);
  if (r.status !== 200 && r.status !== 202 && r.status !== 404) throw new Error(`delete ${name}: ${r.status}`);
  log(`released ${name}`);
}

let passing = false;
let again = false;

/** One pass over every claim of our class and every volume of ours. */
async function pass(): Promise<void> {
  if (passing) {
    again = true;
    return;
  }
  passing = true;
  try {
    do {
      again = false;
      const [claims, volumes] = await Promise.all([api('GET', '/api/v1/persistentvolumeclaims'), api('GET', '/api/v1/persistentvolumes')]);
      const ours = ((volumes.json.items as Obj[] | undefined) ?? []).filter((v) => obj(obj(v.metadata).annotations)['pv.kubernetes.io/provisioned-by'] === PROVISIONER);
      const have = new Set(ours.map((v) => String(obj(v.metadata).name)));
      for (const c of (claims.json.items as Obj[] | undefined) ?? []) {
        const md = obj(c.metadata);
        const sp = obj(c.spec);
        if (sp.storageClassName !== CLASS || sp.volumeName || md.deletionTimestamp || obj(c.status).phase !== 'Pending') continue;
        if (have.has(`pvc-${String(md.uid)}`)) continue;
        await provision(c).catch((e: unknown) => log(`provision ${String(md.namespace)}/${String(md.name)}: ${(e as Error).message}`));
      }
      for (const v of ours) {
        // Released once already: its DELETE waits on the pv-protection finalizer, not on us.
        if (obj(v.metadata).deletionTimestamp) continue;
        const phase = obj(v.status).phase;
        if (phase === 'Released' || phase === 'Failed') await release(v).catch((e: unknown) => log(`release ${String(obj(v.metadata).name)}: ${(e as Error).message}`));
      }
    } while (again);
  } finally {
    passing = false;
  }
}

/** A watch on `p`: each event asks for a pass; when the stream ends (or fails), it is made again. */
function watch(p: string): void {
  const start = () => {
    const req = https.request(new URL(`${p}?watch=1&allowWatchBookmarks=false&timeoutSeconds=300`, opt.server), { method: 'GET', agent }, (res) => {
      res.on('data', () => void pass().catch((e: unknown) => log(`pass: ${(e as Error).message}`)));
      res.on('end', () => setTimeout(start, 200));
      res.on('error', () => setTimeout(start, 1000));
    });
    req.on('error', () => setTimeout(start, 1000));
    req.end();
  };
  start();
}

fs.mkdirSync(opt.dir!, { recursive: true });
log(`brig-loop provisioner: class ${CLASS}, node ${opt.node}, volumes under ${opt.dir}`);
watch('/api/v1/persistentvolumeclaims');
watch('/api/v1/persistentvolumes');
setInterval(() => void pass().catch((e: unknown) => log(`pass: ${(e as Error).message}`)), 5000);
void pass().catch((e: unknown) => log(`pass: ${(e as Error).message}`));
